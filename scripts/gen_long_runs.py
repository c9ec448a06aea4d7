#!/usr/bin/env python3
"""Long runs and large snapshots for tests/corpus/extra (issue 9): streams
the reference accepts whatever their length, which a verifier that keeps
every owner record refused.

    scripts/gen_long_runs.py OUT_DIR [SCALE]

writes the `.sse` files; SCALE (default 1) multiplies their lengths. The
stored answers come from the reference oracle (`node oracle.mjs`)."""
import json
import sys

RS = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def frames(events):
    return "".join("data: " + json.dumps(e, separators=(",", ":")) + "\n\n" for e in events)


def tagged(e, tag):
    return dict(e, subagentRunId=tag) if tag else e


def message(i, tag=None, text="x"):
    m = f"m{i}"
    return [
        tagged({"type": "TEXT_MESSAGE_START", "messageId": m, "role": "assistant"}, tag),
        tagged({"type": "TEXT_MESSAGE_CONTENT", "messageId": m, "delta": text}, tag),
        tagged({"type": "TEXT_MESSAGE_END", "messageId": m}, tag),
    ]


def tool_call(i, tag=None):
    c, m = f"call-{i}", f"m{i}"
    return message(i, tag) + [
        tagged({"type": "TOOL_CALL_START", "toolCallId": c, "toolCallName": "read_file", "parentMessageId": m}, tag),
        tagged({"type": "TOOL_CALL_ARGS", "toolCallId": c, "delta": json.dumps({"path": f"src/{i}.rs"})}, tag),
        tagged({"type": "TOOL_CALL_END", "toolCallId": c}, tag),
        tagged({"type": "TOOL_CALL_RESULT", "messageId": f"r{i}", "toolCallId": c, "content": "ok"}, tag),
    ]


def subagent(tag, finish=False):
    if finish:
        return {"type": "SUBAGENT_FINISHED", "subagentRunId": tag}
    return {"type": "SUBAGENT_STARTED", "subagentRunId": tag, "name": "helper"}


def snapshot(n):
    msgs = []
    for i in range(n):
        msgs.append({"id": f"u{i}", "role": "user", "content": f"question {i}"})
        msgs.append({"id": f"a{i}", "role": "assistant", "content": "answer",
                     "toolCalls": [{"id": f"tc{i}", "type": "function",
                                    "function": {"name": "f", "arguments": "{}"}}]})
    return {"type": "MESSAGES_SNAPSHOT", "messages": msgs}


def cases(scale):
    n = 300 * scale
    yield "x-long-run-tool-calls", [RS] + [e for i in range(n) for e in tool_call(i)] + [RF]
    yield "x-long-snapshot", [RS, snapshot(500 * scale)] + message(0) + [RF]
    # A subagent refers back to its own old ids: forgotten records of one
    # owner decide every check of that owner.
    own = [e for i in range(n) for e in tool_call(i, "s")]
    again = message(0, "s")
    yield "x-long-subagent-own-ids", [RS, subagent("s")] + own + again + [subagent("s", True), RF]
    parent = [e for i in range(n) for e in tool_call(i)]
    # An attributed event for an old, still-recorded id of another owner.
    late = parent + [subagent("s")] + message(n - 1, "s")
    yield "x-long-subagent-claims-recent-id", [RS] + late + [subagent("s", True), RF]


def main():
    out = sys.argv[1]
    scale = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    for name, events in cases(scale):
        with open(f"{out}/{name}.sse", "w") as f:
            f.write(frames(events))


if __name__ == "__main__":
    main()
