//! Decoding is stable under re-encoding: for every payload `decode` accepts,
//! its encoding decodes again (same dialect) to an event with the same
//! encoding, byte for byte.
#![no_main]

use agui_stream::{Dialect, decode, encode, json::Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|payload: &[u8]| {
    for dialect in [Dialect::V1, Dialect::V0] {
        // Ok(None) (an unknown type in V1) and errors are both fine.
        let Ok(Some(first)) = decode(payload, dialect, Limits::new()) else {
            continue;
        };
        assert_eq!(first.dialect(), dialect);
        let mut once = Vec::new();
        encode(&first, &mut once).expect("a Vec never fills up");
        let second = match decode(&once, dialect, Limits::new()) {
            Ok(Some(second)) => second,
            other => panic!(
                "{dialect:?}: the encoding of an accepted event is not accepted: {other:?}\n\
                 encoding: {}",
                String::from_utf8_lossy(&once)
            ),
        };
        assert_eq!(second.event_type(), first.event_type());
        let mut twice = Vec::new();
        encode(&second, &mut twice).expect("a Vec never fills up");
        assert!(
            once == twice,
            "{dialect:?}: encoding is not idempotent\n once: {}\ntwice: {}",
            String::from_utf8_lossy(&once),
            String::from_utf8_lossy(&twice)
        );
    }
});
