//! The property the fuzz target and `tests/generated.rs` check on one
//! generated case (shared: the fuzz target includes this file).

use agui_fuzz_consumer::{ErrorKind, Run, consume};
use agui_stream::generator::{Expected, GeneratedStream, Reason};
use agui_stream::verify::{Entity, Rule};

/// Feeds `case` to the consumer in the generator's pieces and checks:
/// - it never panics (the harness sees a panic);
/// - a valid stream is accepted, every message and tool call it saw is
///   closed (done, or interrupted by a `RUN_ERROR`), and the run is over;
/// - a stream with a violation is rejected, if at all, at the violating
///   frame: everything before it is valid, and it is the last event. It is
///   rejected there, with the right kind of error, when the violation is one
///   of the rules the consumer promises to check ([`promised`]); the others
///   may be accepted, as the consumer does not check them.
pub fn check(case: &GeneratedStream) {
    let verdict = consume(case.pieces());
    match (case.expected, verdict) {
        (Expected::Valid, Ok(conversation)) => {
            assert!(
                conversation.all_closed(),
                "a message or tool call left open: {conversation:#?}"
            );
            assert!(
                matches!(conversation.run, Run::Finished | Run::Errored),
                "the run is not over: {:?}",
                conversation.run
            );
        }
        (Expected::Valid, Err(e)) => panic!("rejected a valid stream: {e:?}"),
        (Expected::Violation { frame, reason }, Err(e)) => {
            assert_eq!(
                e.frame, frame,
                "rejected frame {} for {reason:?} at frame {frame}: {e:?}",
                e.frame
            );
            if let Some(kind) = promised(reason) {
                assert!(kind(&e.kind), "{reason:?} rejected as {e:?}");
            }
        }
        (Expected::Violation { frame, reason }, Ok(_)) => {
            assert!(
                promised(reason).is_none(),
                "accepted {reason:?} at frame {frame}"
            );
        }
    }
}

/// The violations the consumer promises to reject, and the kind of error
/// it gives them (the rules in `src/lib.rs`' documentation).
pub fn promised(reason: Reason) -> Option<fn(&ErrorKind) -> bool> {
    let protocol: fn(&ErrorKind) -> bool = |k| matches!(k, ErrorKind::Protocol(_));
    let known = |e| matches!(e, Entity::TextMessage | Entity::ToolCall);
    match reason {
        Reason::Json => Some(|k| matches!(k, ErrorKind::Json(_))),
        Reason::Rule(
            Rule::FirstEvent | Rule::RunStillActive | Rule::AfterRunFinished | Rule::AfterRunError,
        ) => Some(protocol),
        Reason::Rule(Rule::AlreadyOpen(e) | Rule::NotOpen(e) | Rule::OpenAtRunFinished(e))
            if known(e) =>
        {
            Some(protocol)
        }
        _ => None,
    }
}
