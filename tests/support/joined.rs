//! Split deltas joined again (`Options::split`): a rewriter's output with
//! every piece joined to the event after it of the same head — `head + a +
//! "}\n\n" + head + b…` → `head + a + b…` — which is what a raw buffer
//! holding the whole stream writes.

/// The blocks of an output (each with its blank line).
pub fn blocks(out: &[u8]) -> Vec<&[u8]> {
    let mut blocks = Vec::new();
    let mut rest = out;
    while let Some(k) = rest.windows(2).position(|w| w == b"\n\n") {
        blocks.push(&rest[..k + 2]);
        rest = &rest[k + 2..];
    }
    if !rest.is_empty() {
        blocks.push(rest);
    }
    blocks
}

/// Where a delta event's head ends (`…,"delta":"`), if `block` is one
/// written `data: {"type":"T","idKey":"id","delta":"`.
fn head_len(block: &[u8]) -> Option<usize> {
    let types = [
        ("TEXT_MESSAGE_CONTENT", "messageId"),
        ("TOOL_CALL_ARGS", "toolCallId"),
        ("REASONING_MESSAGE_CONTENT", "messageId"),
    ];
    let rest = block.strip_prefix(b"data:")?;
    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
    types.iter().find_map(|(ty, key)| {
        let prefix = format!(r#"{{"type":"{ty}","{key}":""#);
        let after = rest.strip_prefix(prefix.as_bytes())?;
        let id = after.iter().position(|&b| b == b'"')?;
        let tail = after[id..].strip_prefix(br#"","delta":""#)?;
        Some(block.len() - tail.len())
    })
}

/// `out` with every piece joined to the next event of the same head.
pub fn joined(out: &[u8]) -> Vec<u8> {
    let mut joined: Vec<u8> = Vec::new();
    let mut last: Option<&[u8]> = None;
    for block in blocks(out) {
        let head = head_len(block).map(|n| &block[..n]);
        if let (Some(prev), Some(head)) = (last, head)
            && prev == head
            && joined.ends_with(b"\"}\n\n")
        {
            joined.truncate(joined.len() - 4);
            joined.extend_from_slice(&block[head.len()..]);
        } else {
            joined.extend_from_slice(block);
        }
        last = head;
    }
    joined
}
