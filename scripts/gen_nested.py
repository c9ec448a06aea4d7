#!/usr/bin/env python3
"""Streams shaped like long real conversations with one large value nested
somewhere, for tests/corpus/extra: a 5 KB tool result in a message history,
a large tool-call arguments string, a large text or image part, a history of
20 messages of 2 KB each, a run input with a large tool schema, context,
state, forwardedProps, resume payload or message, a tool result given as
content parts, patches with one large op value, a large activity content, a
run result, and an interrupt with a large response schema and message. Each
shape comes as a valid case and as broken ones: broken deep inside the
structure around the large value (a schema error in a later message or part,
a nested member of the wrong kind, an unknown role, a bad JSON Pointer in a
later op), broken after it (a later member or frame), or with a JSON syntax
error inside the large value. Some put the large member before the small
ones, or repeat keys. Every large value is larger than a 1 KiB and a 4 KiB
frame buffer, so a checker reads these frames as they stream past.

    scripts/gen_nested.py OUT_DIR [SCALE]

writes `x-nested-*.sse` into OUT_DIR and puts one row per case into
OUT_DIR/MANIFEST.tsv (replacing the `x-nested-` rows it already has; a
missing manifest is created). SCALE is the size in bytes of the large value
(default 5500; the history's messages are 2/5 of it each), so the same
shapes can be made bigger. The verdict columns are the ones intended; the
stored answers come from the reference oracle (`node oracle.mjs --ref 1.0.0
--write .expected`, `--ref 0.0.59 --write .expected-0.0.59`), which should
agree with them."""
import base64
import hashlib
import json
import os
import sys

PREFIX = "x-nested-"
THREAD = "thread-3f9c2a7e"
RUN = "run-b41d"


# ------------------------------------------------------------- deterministic

def uid(tag):
    """A v4-looking UUID derived from `tag`."""
    h = hashlib.sha256(tag.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def noise(tag, n):
    """`n` deterministic bytes."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(f"{tag}/{i}".encode()).digest()
        i += 1
    return bytes(out[:n])


def jdump(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def size(v):
    return len(jdump(v).encode())


# ------------------------------------------------------------- large values

WORDS = ("the parser reads each frame once and keeps only what a later rule "
         "needs while the rest streams past into the sink unchanged").split()


def big_text(n, tag="text"):
    """Tool output as a string of about `n` bytes once JSON-encoded: source
    lines with quotes, backslashes, tabs, non-ASCII and a control character."""
    lines = []
    i = 0
    h = noise(tag, 4096)
    while size("\n".join(lines)) < n:
        k = h[i % len(h)]
        if i % 17 == 0:
            line = f"// section {i}: «{WORDS[k % len(WORDS)]}» — naïve café 😀"
        elif i % 11 == 0:
            line = f'\tlet path = "C:\\\\agents\\\\{WORDS[k % len(WORDS)]}_{i}.rs";'
        elif i % 29 == 0:
            line = f"    raw bytes: \u0001\u001f end of record {i}"
        else:
            words = " ".join(WORDS[(k + j) % len(WORDS)] for j in range(6))
            line = f'{i:4} | fn step_{i}(x: &str) -> bool {{ x.contains("{words}") }}'
        lines.append(line)
        i += 1
    return "\n".join(lines)


def big_b64(n, tag="image", magic=b"\x89PNG\r\n\x1a\n"):
    """A base64 payload of `n` characters (a PNG-looking one by default)."""
    raw = magic + noise(tag, n * 3 // 4)
    return base64.b64encode(raw).decode()[:n // 4 * 4]


def big_schema(n, tag="schema"):
    """A JSON Schema object of about `n` bytes, nested a few levels."""
    props = {}
    schema = {"type": "object", "title": "EditRequest",
              "description": "Edits to apply to the working tree, checked before anything is written.",
              "properties": props, "required": [], "additionalProperties": False}
    i = 0
    while size(schema) < n:
        name = f"{WORDS[i % len(WORDS)]}_{i}"
        if i % 4 == 0:
            props[name] = {"type": "object", "description": f"group {i} of options",
                           "properties": {
                               "enabled": {"type": "boolean", "default": i % 8 == 0},
                               "limit": {"type": "integer", "minimum": 0, "maximum": 1000 * i + 1},
                               "paths": {"type": "array", "items": {"type": "string", "pattern": "^[a-z/._-]+$"},
                                         "maxItems": 64}},
                           "required": ["enabled"]}
        elif i % 4 == 1:
            props[name] = {"type": "string", "enum": ["keep", "rewrite", "drop", f"v{i}"],
                           "description": f"what to do with field {i} when it is \"missing\""}
        elif i % 4 == 2:
            props[name] = {"type": "number", "exclusiveMinimum": -1.5, "multipleOf": 0.25}
        else:
            props[name] = {"anyOf": [{"type": "null"}, {"type": "string", "format": "date-time"}]}
        schema["required"].append(name)
        i += 1
    return schema


def big_state(n, tag="state"):
    """Agent state of about `n` bytes: documents with nested sections."""
    docs = []
    state = {"documents": docs, "cursor": {"page": 3, "pageSize": 25, "hasMore": True},
             "selection": None, "filters": {"tags": ["agents", "streams"], "minScore": 0.5}}
    h = noise(tag, 1024)
    i = 0
    while size(state) < n:
        k = h[i % len(h)]
        docs.append({"id": f"doc-{i:04}", "title": f"{WORDS[k % len(WORDS)].title()} notes {i}",
                     "score": round(k / 255, 3), "pinned": i % 5 == 0, "owner": None,
                     "tags": [WORDS[(k + j) % len(WORDS)] for j in range(3)],
                     "sections": [{"heading": f"part {j}", "words": (k * (j + 1)) % 997,
                                   "refs": [f"doc-{(i + j) % 50:04}"]} for j in range(2)]})
        i += 1
    return state


def big_args(n, tag="args"):
    """Tool-call arguments: a JSON text (a string) of about `n` bytes when
    written as a JSON string (its quotes escaped)."""
    edits = []
    args = {"path": "src/check/spilled/mod.rs", "dryRun": False, "edits": edits}
    i = 0
    while size(jdump(args)) < n:
        edits.append({"line": 40 + 7 * i, "old": f'let x{i} = "{WORDS[i % len(WORDS)]}";',
                      "new": f'let x{i} = r"{WORDS[(i + 3) % len(WORDS)]}\\n";'})
        i += 1
    return jdump(args)


# ------------------------------------------------------------- events

RS = {"type": "RUN_STARTED", "threadId": THREAD, "runId": RUN}
RF = {"type": "RUN_FINISHED", "threadId": THREAD, "runId": RUN}


def text_message(mid, text, role="assistant"):
    half = len(text) // 2
    return [{"type": "TEXT_MESSAGE_START", "messageId": mid, "role": role},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": text[:half]},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": text[half:]},
            {"type": "TEXT_MESSAGE_END", "messageId": mid}]


def tool_call(cid, name, args, parent):
    return [{"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": name, "parentMessageId": parent},
            {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": args[:9]},
            {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": args[9:]},
            {"type": "TOOL_CALL_END", "toolCallId": cid}]


def tool_result(mid, cid, content):
    return {"type": "TOOL_CALL_RESULT", "messageId": mid, "toolCallId": cid, "content": content, "role": "tool"}


def new_turn(tag="turn"):
    """The turn a run streams after its history: a short answer, one tool
    call and its result, and the closing answer."""
    a, c, r, b = uid(tag + "/a"), "call_" + uid(tag + "/c")[:8], uid(tag + "/r"), uid(tag + "/b")
    return (text_message(a, "Let me check the test output first.")
            + tool_call(c, "run_tests", '{"filter":"spilled","release":true}', a)
            + [tool_result(r, c, "test result: ok. 42 passed; 0 failed")]
            + text_message(b, "All 42 spilled tests pass now."))


def flat(parts):
    for p in parts:
        if isinstance(p, list):
            yield from flat(p)
        else:
            yield p


def run(*middle, finish=RF):
    """RUN_STARTED, the events of `middle` (lists nested any way), `finish`."""
    return [RS] + list(flat(middle)) + ([finish] if finish else [])


# ------------------------------------------------------------- histories

def msg(role, i, content=None, **more):
    m = {"id": uid(f"h{i}"), "role": role}
    if content is not None:
        m["content"] = content
    m.update(more)
    return m


def call(i, name, args):
    return {"id": f"call_{i:03}", "type": "function", "function": {"name": name, "arguments": args}}


def history(large=None, after=()):
    """A conversation: system prompt, a question, a read_file call and its
    result, an answer, a follow-up with parts, another call, then `after`.
    `large` replaces one message (by its role in the story)."""
    ms = {
        "system": msg("system", 0, "You are a careful coding assistant. Read files before you edit them."),
        "question": msg("user", 1, "Why does the checker stop on long tool results with a 1 KiB buffer?"),
        "call": msg("assistant", 2, "I'll read the module first.",
                    toolCalls=[call(1, "read_file", '{"path":"src/check/spilled/mod.rs"}')]),
        "result": msg("tool", 3, "pub mod array;\npub mod input;\n", toolCallId="call_001"),
        "answer": msg("assistant", 4, "The module reads arrays element by element; content parts are not."),
        "followup": msg("user", 5, [{"type": "text", "text": "Here is the trace:"},
                                    {"type": "text", "text": "Capacity::FrameBuffer at frame 12"}]),
        "call2": msg("assistant", 6, toolCalls=[call(2, "grep", '{"pattern":"FrameBuffer","path":"src"}')]),
        "result2": msg("tool", 7, "src/check/spilled/input.rs:88: Capacity::FrameBuffer", toolCallId="call_002"),
    }
    if large:
        key, m = large
        ms[key] = m
    return list(ms.values()) + list(after)


def snapshot(messages):
    return {"type": "MESSAGES_SNAPSHOT", "messages": messages}


def long_history(n_msgs, each, tag="long"):
    """`n_msgs` messages of about `each` bytes: user questions, assistant
    answers with a tool call, tool results."""
    out = []
    for i in range(n_msgs):
        body = big_text(each - 120, f"{tag}{i}")
        if i % 4 == 0:
            out.append(msg("user", 100 + i, body))
        elif i % 4 == 1:
            out.append(msg("assistant", 100 + i, body[: len(body) // 2],
                           toolCalls=[call(100 + i, "read_file", jdump({"path": f"src/{i}.rs"}))]))
        elif i % 4 == 2:
            out.append(msg("tool", 100 + i, body, toolCallId=f"call_{99 + i:03}"))
        else:
            out.append(msg("assistant", 100 + i, body))
    return out


# ------------------------------------------------------------- raw frames

def frame(e):
    """One SSE frame: a raw JSON text as it is, anything else compact."""
    return "data: " + (e if isinstance(e, str) else jdump(e)) + "\n\n"


def raw(event, old, new, past=0.0):
    """The compact JSON of `event` with the first `old` that starts past
    that fraction of it replaced by `new`: for syntax errors and duplicate
    keys, which a dict cannot hold."""
    text = jdump(event)
    at = text.index(old, int(len(text) * past))
    return text[:at] + new + text[at + len(old):]


def break_inside(event, large, bad):
    """`event` with `bad` (raw JSON text) spliced into the middle of the
    string `large` it contains."""
    enc = jdump(large)[1:-1]
    text = jdump(event)
    start = text.index(enc)
    at = start + len(enc) * 3 // 5
    if " " in enc:  # next to a space, so never inside an escape
        at = text.index(" ", at)
    return text[:at] + bad + text[at:]


# ------------------------------------------------------------- cases

def cases(n):
    big = big_text(n)
    b64 = big_b64(n)
    pdf = big_b64(n, "pdf", magic=b"%PDF-1.7\n")
    schema = big_schema(n)
    state = big_state(n)
    args = big_args(n)
    turn = new_turn()

    # 1. A history with one large message.
    tool_big = msg("tool", 3, big, toolCallId="call_001")
    h = history(("result", tool_big))
    yield ("snapshot-tool-result", "a 5 KB tool result in the middle of a history",
           run([snapshot(h)], turn), "valid", "valid")
    call_big = msg("assistant", 2, "I'll apply the edits.", toolCalls=[call(1, "apply_edits", args)])
    yield ("snapshot-tool-args", "an assistant message in a history whose tool call has 5 KB of arguments",
           run([snapshot(history(("call", call_big)))], turn), "valid", "valid")
    parts_big = msg("user", 5, [{"type": "text", "text": "Here is the trace:"},
                                {"type": "text", "text": big},
                                {"type": "text", "text": "What is wrong?"}])
    yield ("snapshot-user-text-part", "a user message whose content parts hold a 5 KB text part",
           run([snapshot(history(("followup", parts_big)))], turn), "valid", "valid")
    image_big = msg("user", 5, [{"type": "text", "text": "The screenshot:"},
                                {"type": "image", "source": {"type": "data", "value": b64, "mimeType": "image/png"}}])
    yield ("snapshot-user-image-data", "a user image part with a 5 KB inline data source (V1 and V0 shape)",
           run([snapshot(history(("followup", image_big)))], turn), "valid", "valid")
    binary_big = msg("user", 5, [{"type": "text", "text": "The screenshot:"},
                                 {"type": "binary", "mimeType": "image/png", "data": b64, "filename": "trace.png"}])
    yield ("snapshot-user-binary-v0", "a V0 binary part with 5 KB of data (an unknown part V1 drops)",
           run([snapshot(history(("followup", binary_big)))], turn), "valid", "valid")
    tool_parts = msg("tool", 3, [{"type": "text", "text": big},
                                 {"type": "document", "source": {"type": "url", "value": "https://example.com/r.pdf"}}],
                     toolCallId="call_001")
    yield ("snapshot-tool-parts", "a tool message whose content is parts with a 5 KB text (V0: content must be a string)",
           run([snapshot(history(("result", tool_parts)))], turn), "valid", "invalid")
    # broken inside, after the large value
    bad_later = history(("result", tool_big))
    bad_later[6] = dict(bad_later[6], content=42)
    yield ("snapshot-bad-later-message", "after a 5 KB tool result, a later assistant message with numeric content",
           run([snapshot(bad_later)], turn), "invalid", "invalid")
    bad_part = msg("user", 5, [{"type": "text", "text": big}, {"type": "text", "text": 7}])
    yield ("snapshot-bad-part-after-large", "a numeric text part after a 5 KB text part",
           run([snapshot(history(("followup", bad_part)))], turn), "invalid", "invalid")
    bad_source = msg("user", 5, [{"type": "image", "source": {"type": "data", "value": b64, "mimeType": "image/png"}},
                                 {"type": "image", "source": {"type": "data", "value": "iVBORw0KGgo="}}])
    yield ("snapshot-image-source-after-large", "a data source without mimeType in the image part after a 5 KB one",
           run([snapshot(history(("followup", bad_source)))], turn), "invalid", "invalid")
    bad_call = msg("assistant", 2, "Two edits.", toolCalls=[call(1, "apply_edits", args),
                                                            {"id": "call_009", "type": "function",
                                                             "function": "apply_edits"}])
    yield ("snapshot-toolcall-function-kind", "a tool call whose function is a string, after one with 5 KB of arguments",
           run([snapshot(history(("call", bad_call)))], turn), "invalid", "invalid")
    role_after = history(("result", tool_big), after=[msg("critic", 8, "Looks fine to me.")])
    yield ("snapshot-unknown-role-after-large", "a message with an unknown role after a 5 KB tool result (V1 drops it)",
           run([snapshot(role_after)], turn), "valid", "invalid")
    own_member = msg("tool", 3, big, toolCallId=5)
    yield ("snapshot-large-message-bad-member", "a 5 KB tool message whose toolCallId, after the content, is a number",
           run([snapshot(history(("result", own_member)))], turn), "invalid", "invalid")
    # broken after the large value
    late_member = dict(snapshot(h), timestamp="yesterday")
    yield ("snapshot-bad-member-after", "a string timestamp after a history with a 5 KB tool result",
           run([late_member], turn), "invalid", "invalid")
    yield ("snapshot-then-verify-error", "a 5 KB history, then TOOL_CALL_ARGS for a call never started",
           run([snapshot(h), [{"type": "TOOL_CALL_ARGS", "toolCallId": "call_001", "delta": "{}"}]], turn),
           "invalid", "invalid")
    # JSON syntax errors inside the large value
    yield ("snapshot-syntax-bad-escape", "a bad escape (\\q) inside a 5 KB tool result",
           run([[break_inside(snapshot(h), big, "\\q")]], turn), "invalid", "invalid")
    cut = break_inside(snapshot(h), big, "@@CUT@@")
    yield ("snapshot-truncated-in-large", "the stream ends inside a 5 KB tool result",
           "".join(frame(e) for e in run(turn, finish=None)) + frame(cut[:cut.index("@@CUT@@")])[:-2],
           "invalid", "invalid")
    yield ("snapshot-syntax-control-char", "a raw tab inside a 5 KB base64 image value",
           run([[break_inside(snapshot(history(("followup", image_big))), b64, "\t")]], turn),
           "invalid", "invalid")

    # 2. A history of 20 messages of about 2 KB each.
    each = max(1200, n * 2 // 5)
    longh = long_history(20, each)
    yield ("history-20", "a history of 20 messages of about 2 KB each",
           run([snapshot(longh)], turn), "valid", "valid")
    late_bad = [dict(m) for m in longh]
    late_bad[17] = dict(late_bad[17], toolCalls={"id": "call_117"})
    yield ("history-20-bad-late", "message 18 of 20 (2 KB each) has toolCalls as an object",
           run([snapshot(late_bad)], turn), "invalid", "invalid")
    yield ("history-20-null-metadata-after", "a 20-message history, then metadata null in the same event",
           run([dict(snapshot(longh), metadata=None)], turn), "invalid", "invalid")

    # 3. RUN_STARTED with a large input.
    def input_(**more):
        base = {"threadId": THREAD, "runId": RUN, "messages": history()[:5], "tools": [], "context": [],
                "state": {"step": 1}, "forwardedProps": {}}
        base.update(more)
        return base

    def started(inp, **more):
        return dict(RS, input=inp, **more)

    tools = [{"name": "read_file", "description": "Read a file", "parameters": {"type": "object"}},
             {"name": "apply_edits", "description": "Apply edits to a file", "parameters": schema},
             {"name": "grep", "description": "Search the tree", "parameters": {"type": "object"}}]
    ctx = [{"description": "the user's locale", "value": "de-CH"},
           {"description": "the failing log", "value": big},
           {"description": "the branch", "value": "spilled-rewrite"}]
    resume = [{"interruptId": "int-1", "status": "resolved", "payload": state},
              {"interruptId": "int-2", "status": "cancelled"}]
    yield ("input-tool-schema", "RUN_STARTED.input with a tool whose parameters are a 5 KB JSON Schema",
           [started(input_(tools=tools))] + turn + [RF], "valid", "valid")
    yield ("input-context", "RUN_STARTED.input with a 5 KB context value",
           [started(input_(context=ctx))] + turn + [RF], "valid", "valid")
    yield ("input-state", "RUN_STARTED.input with a 5 KB state",
           [started(input_(state=state))] + turn + [RF], "valid", "valid")
    yield ("input-forwarded-props", "RUN_STARTED.input with 5 KB of forwardedProps",
           [started(input_(forwardedProps={"client": "web", "trace": state}))] + turn + [RF], "valid", "valid")
    yield ("input-resume", "RUN_STARTED.input resuming with a 5 KB payload",
           [started(input_(resume=resume))] + turn + [RF], "valid", "valid")
    yield ("input-message", "RUN_STARTED.input with a 5 KB tool message",
           [started(input_(messages=history(("result", tool_big))))] + turn + [RF], "valid", "valid")
    # broken inside
    bad_tools = tools[:2] + [{"name": "grep", "parameters": {"type": "object"}}]
    yield ("input-tool-after-large", "a tool without description after one with a 5 KB schema",
           [started(input_(tools=bad_tools))] + turn + [RF], "invalid", "invalid")
    bad_ctx = ctx[:2] + [{"description": "the branch", "value": {"name": "spilled-rewrite"}}]
    yield ("input-context-kind-after-large", "a context entry whose value is an object, after a 5 KB one",
           [started(input_(context=bad_ctx))] + turn + [RF], "invalid", "invalid")
    bad_resume = resume[:1] + [{"interruptId": "int-2", "status": "accepted"}]
    yield ("input-resume-status-after-large", "a resume entry with an unknown status after a 5 KB payload",
           [started(input_(resume=bad_resume))] + turn + [RF], "invalid", "invalid")
    role_in = history(("result", tool_big), after=[msg("critic", 8, "ok")])
    yield ("input-message-unknown-role", "an input message with an unknown role after a 5 KB one (V1 drops it)",
           [started(input_(messages=role_in))] + turn + [RF], "valid", "invalid")
    no_lists = input_(state=state)
    del no_lists["tools"], no_lists["context"]
    yield ("input-no-tools-context", "an input with a 5 KB state and no tools or context (V1 defaults, V0 requires)",
           [started(no_lists)] + turn + [RF], "valid", "invalid")
    bad_schema = input_(tools=tools[:1] + [dict(tools[1], metadata=["x"])] + tools[2:])
    yield ("input-tool-metadata-kind", "a tool's metadata is an array, after its 5 KB parameters",
           [started(bad_schema)] + turn + [RF], "invalid", "invalid")
    # broken after
    yield ("input-bad-member-after", "RUN_STARTED with a 5 KB input, then a numeric parentRunId",
           [started(input_(state=state), parentRunId=7)] + turn + [RF], "invalid", "invalid")
    yield ("input-then-verify-error", "a 5 KB run input, then TEXT_MESSAGE_CONTENT for a message never started",
           [started(input_(tools=tools)), {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-none", "delta": "hi"}]
           + turn + [RF], "invalid", "invalid")
    yield ("input-syntax-in-schema", "a trailing comma inside a 5 KB tool schema",
           [raw(started(input_(tools=tools)), '"maxItems":64}', '"maxItems":64,}', 0.6)] + turn + [RF],
           "invalid", "invalid")

    # 4. TOOL_CALL_RESULT with content parts.
    a, c = uid("t4/a"), "call_t4"
    before = text_message(a, "Reading the report.") + tool_call(c, "fetch_report", '{"id":"r-17"}', a)
    after = text_message(uid("t4/b"), "The report says the buffer was too small.")

    def result(content, **more):
        return run(before, [dict(tool_result(uid("t4/r"), c, content), **more)], after)

    yield ("tool-result-string", "TOOL_CALL_RESULT with a 5 KB string",
           result(big), "valid", "valid")
    yield ("tool-result-text-parts", "TOOL_CALL_RESULT whose parts hold a 5 KB text part (V0: a string only)",
           result([{"type": "text", "text": "Report r-17:"}, {"type": "text", "text": big},
                   {"type": "text", "text": "(end)"}]), "valid", "invalid")
    yield ("tool-result-image-data", "TOOL_CALL_RESULT with an image part of 5 KB inline data",
           result([{"type": "text", "text": "chart:"},
                   {"type": "image", "id": "img-1", "source": {"type": "data", "value": b64, "mimeType": "image/png"},
                    "metadata": {"width": 640}}]), "valid", "invalid")
    yield ("tool-result-document-data", "TOOL_CALL_RESULT with a document part of 5 KB inline PDF data",
           result([{"type": "document", "source": {"type": "data", "value": pdf, "mimeType": "application/pdf"}},
                   {"type": "image", "source": {"type": "file", "value": "file-abc123", "provider": "openai"}}]),
           "valid", "invalid")
    yield ("tool-result-bad-part-after-large", "a data source without mimeType after a 5 KB text part",
           result([{"type": "text", "text": big},
                   {"type": "image", "source": {"type": "data", "value": "iVBORw0KGgo="}}]), "invalid", "invalid")
    yield ("tool-result-unknown-part-after-large", "an unknown part type after a 5 KB text part (V1 drops it)",
           result([{"type": "text", "text": big},
                   {"type": "binary", "mimeType": "image/png", "data": "iVBORw0KGgo="}]), "valid", "invalid")
    yield ("tool-result-source-kind", "a 5 KB image data value that is an array of strings",
           result([{"type": "image", "source": {"type": "data", "value": [b64[:n // 2], b64[n // 2:]],
                                                "mimeType": "image/png"}}]), "invalid", "invalid")
    yield ("tool-result-bad-role-after", "TOOL_CALL_RESULT with 5 KB parts, then role assistant",
           result([{"type": "text", "text": big}], role="assistant"), "invalid", "invalid")
    yield ("tool-result-then-verify-error", "a 5 KB tool result, then TOOL_CALL_END for the call already ended",
           run(before, [tool_result(uid("t4/r"), c, big), {"type": "TOOL_CALL_END", "toolCallId": c}], after),
           "invalid", "invalid")
    yield ("tool-result-syntax-in-base64", "a bad escape inside 5 KB of inline image data",
           run(before, [break_inside(tool_result(uid("t4/r"), c,
                                                 [{"type": "image", "source": {"type": "data", "value": b64,
                                                                               "mimeType": "image/png"}}]),
                                     b64, "\\x41")], after), "invalid", "invalid")

    # 5. Patches with one large op value; activity content.
    ops = [{"op": "test", "path": "/version", "value": 3},
           {"op": "replace", "path": "/version", "value": 4},
           {"op": "add", "path": "/workspace", "value": state},
           {"op": "remove", "path": "/draft"},
           {"op": "move", "from": "/inbox/0", "path": "/done/-"},
           {"op": "copy", "from": "/workspace/cursor", "path": "/lastCursor"}]
    snap = {"type": "STATE_SNAPSHOT", "snapshot": {"version": 3, "draft": "x", "inbox": ["a"], "done": []}}

    def delta(ops_):
        return {"type": "STATE_DELTA", "delta": ops_}

    yield ("state-delta-large-value", "STATE_DELTA with six ops, one adding a 5 KB value",
           run([snap, delta(ops)], turn), "valid", "valid")
    yield ("state-delta-pointer-after-large", "a path without its leading slash in the op after a 5 KB value",
           run([snap, delta(ops[:3] + [{"op": "remove", "path": "draft"}] + ops[4:])], turn), "invalid", "valid")
    yield ("state-delta-from-after-large", "a from pointer with ~2 in the op after a 5 KB value",
           run([snap, delta(ops[:4] + [{"op": "move", "from": "/inbox/~2", "path": "/done/-"}] + ops[5:])], turn),
           "invalid", "valid")
    yield ("state-delta-unknown-op-after-large", "an unknown op after a 5 KB value (V1 drops it)",
           run([snap, delta(ops[:3] + [{"op": "merge", "path": "/x", "value": 1}] + ops[3:])], turn),
           "valid", "valid")
    yield ("state-delta-missing-value-after-large", "a replace without value after a 5 KB value",
           run([snap, delta(ops[:3] + [{"op": "replace", "path": "/version"}])], turn), "invalid", "valid")
    yield ("state-delta-large-value-then-bad-delta", "a 5 KB patch, then a STATE_DELTA whose delta is an object",
           run([snap, delta(ops), {"type": "STATE_DELTA", "delta": {"op": "remove", "path": "/x"}}], turn),
           "invalid", "invalid")
    yield ("state-delta-syntax-in-value", "a missing value inside the 5 KB op value",
           run([snap, [raw(delta(ops), '"owner":null', '"owner":', 0.6)]], turn), "invalid", "invalid")
    act_id = uid("activity")
    act = {"type": "ACTIVITY_SNAPSHOT", "messageId": act_id, "activityType": "plan",
           "content": {"title": "Plan", "steps": ["read", "edit", "test"]}}

    def adelta(ops_):
        return {"type": "ACTIVITY_DELTA", "messageId": act_id, "activityType": "plan", "patch": ops_}

    aops = [{"op": "replace", "path": "/title", "value": "Plan (2)"},
            {"op": "add", "path": "/attachments/report", "value": state},
            {"op": "remove", "path": "/steps/0"},
            {"op": "test", "path": "/steps/0", "value": "edit"}]
    yield ("activity-delta-large-value", "ACTIVITY_DELTA with four ops, one adding a 5 KB value",
           run([act, adelta(aops)], turn), "valid", "valid")
    yield ("activity-delta-pointer-after-large", "a pointer with ~ not followed by 0 or 1 after a 5 KB value",
           run([act, adelta(aops[:2] + [{"op": "remove", "path": "/steps/~x"}] + aops[3:])], turn),
           "invalid", "valid")
    yield ("activity-delta-op-kind-after-large", "an op whose op is a number after a 5 KB value (V1 drops it)",
           run([act, adelta(aops[:2] + [{"op": 3, "path": "/steps/0"}])], turn), "valid", "valid")
    big_act = dict(act, content={"title": "Report", "body": big, "progress": 0.5})
    yield ("activity-snapshot-large-content", "ACTIVITY_SNAPSHOT with 5 KB of nested content",
           run([big_act, adelta(aops[:1])], turn), "valid", "valid")
    yield ("activity-snapshot-bad-replace-after", "a 5 KB activity content, then replace as a string",
           run([dict(big_act, replace="yes")], turn), "invalid", "invalid")
    yield ("activity-snapshot-content-array", "an ACTIVITY_SNAPSHOT whose 5 KB content is an array",
           run([dict(act, content=[state])], turn), "invalid", "invalid")

    # 6. RUN_FINISHED with a large result or interrupt.
    interrupt = {"id": "int-1", "reason": "approval", "message": big, "toolCallId": "call_t6",
                 "responseSchema": schema, "expiresAt": "2026-12-31T00:00:00Z", "metadata": {"ui": "form"}}
    yield ("run-finished-result", "RUN_FINISHED with a 5 KB result",
           run(turn, finish=dict(RF, result=state)), "valid", "valid")
    yield ("run-finished-interrupt", "an interrupt outcome with a 5 KB message and a 5 KB responseSchema",
           run(turn, finish=dict(RF, outcome={"type": "interrupt", "interrupts": [interrupt]})), "valid", "valid")
    yield ("run-finished-interrupt-after-large", "a second interrupt without reason after the large one",
           run(turn, finish=dict(RF, outcome={"type": "interrupt", "interrupts": [interrupt, {"id": "int-2"}]})),
           "invalid", "invalid")
    yield ("run-finished-response-schema-kind", "an interrupt whose 5 KB responseSchema is an array",
           run(turn, finish=dict(RF, outcome={"type": "interrupt", "interrupts": [
               dict(interrupt, responseSchema=[schema])]})), "invalid", "invalid")
    yield ("run-finished-outcome-extra-member", "an interrupt outcome with a member after its 5 KB interrupts (V0 strict)",
           run(turn, finish=dict(RF, outcome={"type": "interrupt", "interrupts": [interrupt], "note": "x"})),
           "valid", "invalid")
    yield ("run-finished-result-then-bad-usage", "a 5 KB result, then usage with a negative count",
           run(turn, finish=dict(RF, result=state, usage=[{"model": "m", "inputTokens": -1}])), "invalid", "invalid")
    yield ("run-finished-result-then-event", "a 5 KB result, then a text message after the run finished",
           run(turn, [dict(RF, result=state)], text_message("m-late", "late"), finish=None), "invalid", "invalid")
    yield ("run-finished-syntax-in-message", "a bad escape inside an interrupt's 5 KB message",
           run(turn, [break_inside(dict(RF, outcome={"type": "interrupt", "interrupts": [interrupt]}), big, "\\u12G4")],
               finish=None), "invalid", "invalid")

    # 7. The large member first, and repeated keys.
    first = {"content": big, "role": "tool", "id": uid("h3"), "toolCallId": "call_001"}
    part_first = {"content": [{"text": big, "type": "text"}, {"text": "done", "type": "text"}],
                  "role": "user", "id": uid("h5")}
    yield ("order-large-first-messages", "history messages and a part whose 5 KB member comes before role, id, type",
           run([snapshot(history(("result", first), after=[part_first]))], turn), "valid", "valid")
    yield ("order-large-first-events", "events whose 5 KB member comes before their type and ids",
           run(before, [{"content": big, "toolCallId": c, "messageId": uid("t4/r"), "type": "TOOL_CALL_RESULT"},
                        {"delta": ops, "type": "STATE_DELTA"},
                        {"outcome": None, "result": state, "runId": RUN, "threadId": THREAD, "type": "RUN_FINISHED"}],
               finish=None), "valid", "valid")
    first_bad = {"content": big, "role": "tool", "id": uid("h3")}
    yield ("order-large-first-missing-member", "a tool message with 5 KB content first and no toolCallId",
           run([snapshot(history(("result", first_bad)))], turn), "invalid", "invalid")
    first_role = {"content": big, "role": "critic", "id": uid("h3")}
    yield ("order-large-first-unknown-role", "a 5 KB content before an unknown role (V1 drops the message)",
           run([snapshot(history(("result", first_role)))], turn), "valid", "invalid")
    snap_h = snapshot(h)
    # the first `messages` is broken, the last (which wins) is fine
    dup_ok = raw(snap_h, '{"type":"MESSAGES_SNAPSHOT",',
                 '{"type":"MESSAGES_SNAPSHOT","messages":[' + jdump(dict(tool_big, content=7)) + '],')
    dup_inner = raw(snap_h, '"content":' + jdump(big), '"content":' + jdump(big) + ',"content":"(truncated)"')
    dup_type = raw({"type": "CUSTOM", "name": "report", "value": big, "messageId": uid("t7/r"),
                    "toolCallId": "call_t7", "content": "short"},
                   '"content":"short"}', '"content":"short","type":"TOOL_CALL_RESULT"}')
    yield ("duplicate-keys", "repeated keys: a broken messages then a good one, a 5 KB content then a short one, type twice",
           run([dup_ok, dup_inner], tool_call("call_t7", "report", "{}", uid("t7/a")), [dup_type], turn),
           "valid", "valid")
    dup_bad = raw(snap_h, '"content":' + jdump(big), '"content":' + jdump(big) + ',"content":["not","a","string"]')
    yield ("duplicate-keys-last-broken", "a 5 KB tool content repeated by an array, which wins",
           run([[dup_bad]], turn), "invalid", "invalid")


def write(out, scale):
    rows = []
    names = set()
    for name, desc, events, v1, v0 in cases(scale):
        name = PREFIX + name
        assert name not in names, name
        names.add(name)
        assert "\t" not in desc and "\n" not in desc
        text = events if isinstance(events, str) else "".join(frame(e) for e in events)
        with open(os.path.join(out, name + ".sse"), "wb") as f:
            f.write(text.encode())
        rows.append("\t".join([name, desc, "extra", v1, v0]))
    path = os.path.join(out, "MANIFEST.tsv")
    header = "name\tdescription\tcategory\tverdict\tverdict_0.0.59"
    kept = [header]
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            kept = [l for l in f.read().splitlines() if l and not l.startswith(PREFIX)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(kept + rows) + "\n")
    return len(rows)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = sys.argv[1]
    scale = int(sys.argv[2]) if len(sys.argv) > 2 else 5500
    if scale < 1200:
        sys.exit("SCALE must be at least 1200 bytes")
    print(f"{write(out, scale)} cases written to {out}")


if __name__ == "__main__":
    main()
