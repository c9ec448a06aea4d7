// The JSON syntax errors of V8's JSON.parse (the reference runs on Node),
// for tests/json_messages.rs: every truncation and many one-byte edits of
// a few event-shaped seeds, each document that JSON.parse rejects with its
// message. Output: one `JSON.stringify(document) TAB message` per line.
//
//     node scripts/v8-json-messages.mjs > tests/corpus/extra/json-syntax.tsv
const seeds = [
  '{"type":"CUSTOM","name":"caf\\u00e9 \\"q\\"","value":[1,-2.5e+3,true,null]}',
  '{ "a" : "b" , "c" : {} }',
  '[{"a":[]},"x",01.5]',
  '{"k":"\u00e9\u{1F600}x","n":-0}',
];
const bytes = ['"', ',', ':', '}', ']', '{', ' ', '\\', '0', '-', 'e', '.', 'x', '\u0001', '\u00e9'];
const docs = new Set();
for (const s of seeds) {
  for (let n = 0; n <= s.length; n++) docs.add(s.slice(0, n));
  for (let i = 0; i < s.length; i++) {
    docs.add(s.slice(0, i) + s.slice(i + 1));
    for (const b of bytes) {
      docs.add(s.slice(0, i) + b + s.slice(i + 1));
      docs.add(s.slice(0, i) + b + s.slice(i));
    }
  }
}
for (const d of docs) {
  // One data line, and text a Rust string can hold.
  if (/[\r\n]/.test(d) || !d.isWellFormed()) continue;
  try {
    JSON.parse(d);
  } catch (e) {
    console.log(JSON.stringify(d) + '\t' + e.message);
  }
}
