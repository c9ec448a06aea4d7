//! JSON syntax errors worded as V8's `JSON.parse` words them (the
//! reference runs on Node 20): every document of
//! `tests/corpus/extra/json-syntax.tsv` (truncations and one-byte edits of
//! event-shaped seeds, with Node's message, made by
//! `scripts/v8-json-messages.mjs`), sent as one frame, must give the same
//! message, position (in UTF-16 units) and quoted text included.

mod support;

use agui_stream::{Config, ErrorKind, Event, FrameInfo, Pipeline, Stage};

#[test]
fn syntax_errors_read_as_v8_writes_them() {
    let table = support::read(&support::extra_dir().join("json-syntax.tsv"));
    let table = String::from_utf8(table).expect("UTF-8");
    let mut checked = 0;
    let mut differ = Vec::new();
    for line in table.lines() {
        let (doc, want) = line.split_once('\t').expect("document TAB message");
        let doc: String = serde_json::from_str(doc).expect("a JSON string");
        let frame = format!("data: {doc}\n\n");
        let mut buf = [0u8; 0];
        let mut p = Pipeline::new(&mut buf, Config::new());
        let e = p
            .push(frame.as_bytes(), &mut |_: &Event<'_>, _: &FrameInfo| {})
            .expect_err(&doc);
        assert_eq!(e.stage, Stage::Json, "{doc:?}");
        assert!(matches!(e.kind, ErrorKind::Json(_)), "{doc:?}: {e:?}");
        let got = p.message(&e).to_string();
        if got != want {
            differ.push(format!("{doc:?}\n    V8:   {want}\n    ours: {got}"));
        }
        checked += 1;
    }
    assert!(checked > 2000, "{checked} documents");
    assert!(
        differ.is_empty(),
        "{} of {checked} differ:\n{}",
        differ.len(),
        differ[..differ.len().min(20)].join("\n")
    );
}
