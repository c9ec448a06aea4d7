#!/usr/bin/env python3
"""Request bodies for the request-side checker: `RunAgentInput` JSON as a
client POSTs it to an agent endpoint, for tests/corpus/requests.

    scripts/gen_requests.py [--out DIR] [--large [--large-out DIR]]
    scripts/gen_requests.py --check [DIR]

writes `NAME.json` for every case into DIR (default tests/corpus/requests)
and DIR/MANIFEST.tsv (name, description, category, verdict,
verdict_0.0.59: the verdicts intended under 1.0.0 and 0.0.59). Stale
`*.json` files in DIR are removed, and so are answers whose body is gone.
The answers (`NAME.expected` for 1.0.0, `NAME.expected-0.0.59`) come from
the reference oracle's request mode (`node oracle.mjs --ref R --input
--write SUFFIX *.json`); scripts/refresh-requests.sh does both steps.

Names say what a body is:
  valid-*      accepted by both versions' RunAgentInputSchema
  valid-v1-*   accepted by 1.0.0 only (0.0.59 rejects it: stage schema)
  valid-v0-*   accepted by 0.0.59 only (1.0.0 rejects it: stage schema)
  schema-*     well-formed JSON that both schemas reject
  json-*       not JSON (JSON.parse fails: stage json)

--large also writes multi-MB variants (a 2 MB tool result, a 4 MB image, an
11 MiB tool result, 5,000 messages, errors after 2 MB) into --large-out
(default target/requests-large), for CI to generate on the fly; they are
not committed.

--check reads DIR's manifest and answers and verifies that every answer is
what the name and manifest say (ok / stage json / stage schema per
version), that the files are complete, and prints the counts table of
DIR/README.md. Exit 1 on any mismatch.

Python 3 standard library only; the output is byte-for-byte deterministic.
"""
import base64
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_nested import jdump, noise, uid  # noqa: E402  (scripts/, beside this one)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREAD = "thread-7c1e52a4"
RUN = "run-0193"

# ------------------------------------------------------------- deterministic


def b64(tag, n_chars, head=b""):
    """Base64 text of about `n_chars` characters (a multiple of 4)."""
    raw = head + noise(tag, max(0, n_chars * 3 // 4 - len(head)))
    return base64.b64encode(raw).decode("ascii")


PNG_HEAD = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
PDF_HEAD = b"%PDF-1.7\n"


def tool_result_text(tag, n):
    """A tool result of about `n` characters, shaped like what tools return:
    stringified JSON (so the body carries many escaped quotes), with
    newlines, tabs, non-ASCII text and an emoji now and then."""
    rows = []
    size = 2
    i = 0
    words = ["alpha", "Zürich", "naïve", "東京", "\"quoted\"", "back\\slash", "tab\there", "line\nbreak", "😀", "ok"]
    while size < n:
        h = noise(f"{tag}/{i}", 8)
        row = {
            "rank": i,
            "url": f"https://example.org/doc/{h[:4].hex()}",
            "title": " ".join(words[(h[j] + i) % len(words)] for j in range(4)),
            "score": round(h[5] / 255, 3),
            "snippet": " ".join(words[(h[j % 8] + j) % len(words)] for j in range(12)),
        }
        s = jdump(row)
        rows.append(s)
        size += len(json.dumps(s, ensure_ascii=False)) - 1
        i += 1
    return "[" + ",".join(rows) + "]"


def large_parameters(n_props):
    """A JSON-schema `parameters` object with `n_props` properties, nested
    objects, arrays, enums and `$defs`."""
    props = {}
    for i in range(n_props):
        k = i % 5
        if k == 0:
            props[f"field_{i}"] = {"type": "string", "description": f"Field {i}: a free-text value, at most 200 characters.", "maxLength": 200}
        elif k == 1:
            props[f"count_{i}"] = {"type": "integer", "minimum": 0, "maximum": 10 ** (i % 7 + 1), "default": i}
        elif k == 2:
            props[f"mode_{i}"] = {"type": "string", "enum": [f"m{i}-a", f"m{i}-b", f"m{i}-c"], "description": "One of three modes."}
        elif k == 3:
            props[f"filter_{i}"] = {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "op": {"type": "string", "enum": ["eq", "ne", "lt", "gt", "in"]},
                    "value": {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "array", "items": {"type": "string"}}]},
                    "nested": {"type": "object", "properties": {"and": {"type": "array", "items": {"$ref": "#/$defs/clause"}}}},
                },
                "required": ["field", "op"],
                "additionalProperties": False,
            }
        else:
            props[f"tags_{i}"] = {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9-]+$"}, "uniqueItems": True, "maxItems": 16}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "title": "search_catalogue",
        "properties": props,
        "required": [k for k in list(props)[:10]],
        "$defs": {"clause": {"type": "object", "properties": {"field": {"type": "string"}, "value": {}}}},
        "additionalProperties": False,
    }


# ------------------------------------------------------------------ builders


def base(messages=None, tools=None, context=None, **extra):
    """A body valid under both versions (0.0.59 requires tools and context)."""
    d = {"threadId": THREAD, "runId": RUN}
    d["messages"] = messages if messages is not None else []
    d["tools"] = tools if tools is not None else []
    d["context"] = context if context is not None else []
    d.update(extra)
    return d


def user(text="Hello", mid="msg-u1", **kw):
    return {"id": mid, "role": "user", "content": text, **kw}


def assistant(text="Hi, how can I help?", mid="msg-a1", **kw):
    m = {"id": mid, "role": "assistant"}
    if text is not None:
        m["content"] = text
    m.update(kw)
    return m


def tool_call(cid="call-1", name="get_weather", args='{"city":"Paris"}', **kw):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}, **kw}


def tool_msg(content='{"temp":21}', cid="call-1", mid="msg-t1", **kw):
    return {"id": mid, "role": "tool", "content": content, "toolCallId": cid, **kw}


WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city"],
    },
}

SMALL_PNG = b64("small-png", 96, PNG_HEAD)


def src_data(mime="image/png", value=SMALL_PNG):
    return {"type": "data", "value": value, "mimeType": mime}


def src_url(url="https://cdn.example.com/cat.png", mime="image/png"):
    s = {"type": "url", "value": url}
    if mime is not None:
        s["mimeType"] = mime
    return s


def src_file(value="file-AbC123", provider="openai", mime=None):
    s = {"type": "file", "value": value}
    if provider is not None:
        s["provider"] = provider
    if mime is not None:
        s["mimeType"] = mime
    return s


# -------------------------------------------------------------------- cases


class Corpus:
    def __init__(self):
        self.cases = []  # (name, bytes, description)
        self.names = set()

    def add(self, name, body, desc):
        if name in self.names:
            raise SystemExit(f"duplicate case {name}")
        if "\t" in desc or "\n" in desc:
            raise SystemExit(f"bad description for {name}")
        self.names.add(name)
        if isinstance(body, (dict, list)) or body is None:
            data = jdump(body).encode("utf-8")
        elif isinstance(body, str):
            data = body.encode("utf-8", "surrogatepass")
        else:
            data = bytes(body)
        self.cases.append((name, data, desc))


def verdicts(name):
    """(category, verdict 1.0.0, verdict 0.0.59) the name promises; a
    verdict is `valid`, `json` or `schema`."""
    if name.startswith("valid-v1-"):
        return "valid", "valid", "schema"
    if name.startswith("valid-v0-"):
        return "valid", "schema", "valid"
    if name.startswith("valid-"):
        return "valid", "valid", "valid"
    if name.startswith("schema-"):
        return "schema", "schema", "schema"
    if name.startswith("json-"):
        return "json", "json", "json"
    raise SystemExit(f"case name without a known prefix: {name}")


def valid_cases(c):
    # ---- the top level
    c.add("valid-v1-minimal", {"threadId": THREAD, "runId": RUN, "messages": []},
          "only threadId, runId, messages (1.0.0 fills tools and context with []; 0.0.59 requires both)")
    c.add("valid-v1-no-tools", {"threadId": THREAD, "runId": RUN, "messages": [user()], "context": []},
          "tools absent (1.0.0 defaults it to [])")
    c.add("valid-v1-no-context", {"threadId": THREAD, "runId": RUN, "messages": [user()], "tools": [WEATHER_TOOL]},
          "context absent (1.0.0 defaults it to [])")
    c.add("valid-minimal-with-empty-arrays", base(), "threadId, runId and empty messages, tools, context")
    c.add("valid-empty-ids", {"threadId": "", "runId": "", "messages": [], "tools": [], "context": []},
          "empty strings as threadId and runId")
    c.add("valid-parent-run-id", base(parentRunId="run-0192"), "parentRunId set")
    c.add("valid-protocol-version", base(protocolVersion="1.0.0"),
          "protocolVersion (a 1.0.0 member; 0.0.59 strips it)")
    c.add("valid-v0-protocol-version-number", base(protocolVersion=1),
          "protocolVersion as a number (1.0.0 wants a string; 0.0.59 strips the unknown member)")
    # ---- state and forwardedProps
    c.add("valid-state-object", base(state={"step": 3, "plan": ["a", "b"], "user": {"name": "Ada", "prefs": {"dark": True}}}),
          "state as a nested object")
    c.add("valid-state-null", base(state=None), "state null (both drop it from the parsed input)")
    c.add("valid-state-absent", base(forwardedProps={"x": 1}), "no state member")
    c.add("valid-state-array", base(state=[1, "two", None, {"three": 3}]), "state as an array")
    c.add("valid-state-string", base(state="just a string"), "state as a string")
    c.add("valid-state-false-and-zero-forwarded-props", base(state=False, forwardedProps=0),
          "state false and forwardedProps 0 (falsy but not nullish: kept)")
    c.add("valid-forwarded-props-object", base(forwardedProps={"headers": {"x-trace": "abc"}, "model": "gpt-x", "temperature": 0.2}),
          "forwardedProps as an object")
    c.add("valid-v0-forwarded-props-null", base(forwardedProps=None),
          "forwardedProps null (0.0.59 keeps it; 1.0.0 refuses null)")
    # ---- messages: one per role, without and with optional members
    c.add("valid-developer-message", base([{"id": "msg-d1", "role": "developer", "content": "Answer in French."}]),
          "a developer message")
    c.add("valid-developer-message-all-fields",
          base([{"id": "msg-d1", "role": "developer", "content": "Be terse.", "name": "ops", "encryptedValue": "enc:AAEC",
                 "subagentRunId": "sub-1", "metadata": {"source": "console", "ag-ui": {"v": 1}}}]),
          "a developer message with name, encryptedValue, subagentRunId, metadata")
    c.add("valid-system-message", base([{"id": "msg-s1", "role": "system", "content": "You are a helpful assistant."}]),
          "a system message")
    c.add("valid-system-message-with-name", base([{"id": "msg-s1", "role": "system", "content": "", "name": "policy"}]),
          "a system message with name and empty content")
    c.add("valid-user-string", base([user("What's the weather in Paris?")]), "a user message with string content")
    c.add("valid-user-all-fields",
          base([user("hi", name="ada", encryptedValue="enc:xyz", subagentRunId="sub-2", metadata={"locale": "en-GB", "n": None})]),
          "a user message with name, encryptedValue, subagentRunId, metadata (null under a key)")
    c.add("valid-assistant-content", base([user(), assistant()]), "an assistant message with content")
    c.add("valid-assistant-no-content", base([user(), {"id": "msg-a1", "role": "assistant"}]),
          "an assistant message with neither content nor toolCalls")
    c.add("valid-assistant-tool-calls",
          base([user("Weather in Paris and Rome?"),
                assistant(None, toolCalls=[tool_call("call-1", "get_weather", '{"city":"Paris"}'),
                                           tool_call("call-2", "get_weather", '{"city":"Rome","unit":"c"}')]),
                tool_msg('{"temp":21}', "call-1", "msg-t1"), tool_msg('{"temp":25}', "call-2", "msg-t2"),
                assistant("Paris 21°C, Rome 25°C.", "msg-a2")], [WEATHER_TOOL]),
          "assistant with two toolCalls and no content, the two tool results, the answer")
    c.add("valid-assistant-empty-tool-calls", base([user(), assistant("ok", toolCalls=[])]), "assistant with toolCalls []")
    c.add("valid-assistant-all-fields",
          base([user(), assistant("Done.", name="planner", encryptedValue="enc:1", subagentRunId="sub-3",
                                  metadata={"usage": {"inputTokens": 12}},
                                  toolCalls=[tool_call(encryptedValue="enc:tc", metadata={"latencyMs": 41})])]),
          "assistant with name, encryptedValue, subagentRunId, metadata, a toolCall with encryptedValue and metadata")
    c.add("valid-tool-call-arguments-not-json",
          base([user(), assistant(None, toolCalls=[tool_call(args='{"city": "Par')])]),
          "toolCall arguments that are not JSON (a string; neither schema parses it)")
    c.add("valid-tool-message", base([user(), assistant(None, toolCalls=[tool_call()]), tool_msg()]),
          "a tool message answering a toolCall")
    c.add("valid-tool-message-with-error",
          base([user(), assistant(None, toolCalls=[tool_call()]), tool_msg("", error="upstream timeout after 30s")]),
          "a tool message with error")
    c.add("valid-tool-message-all-fields",
          base([user(), assistant(None, toolCalls=[tool_call()]),
                tool_msg("partial", error="truncated", encryptedValue="enc:t", subagentRunId="sub-4", metadata={"cached": True})]),
          "a tool message with error, encryptedValue, subagentRunId, metadata")
    c.add("valid-v1-tool-message-content-parts",
          base([user(), assistant(None, toolCalls=[tool_call()]),
                tool_msg([{"type": "text", "text": "Chart:"}, {"type": "image", "source": src_data()}])]),
          "a tool message whose content is an array of parts (1.0.0 only; 0.0.59 wants a string)")
    c.add("valid-tool-message-name-member",
          base([user(), assistant(None, toolCalls=[tool_call()]), tool_msg(name="get_weather")]),
          "a tool message with a name member (not in either schema: 1.0.0 keeps it, 0.0.59 strips it)")
    c.add("valid-activity-message",
          base([user(), {"id": "msg-act1", "role": "activity", "activityType": "PLAN",
                         "content": {"steps": [{"title": "search", "done": True}, {"title": "answer", "done": False}]}}]),
          "an activity message")
    c.add("valid-activity-message-all-fields",
          base([{"id": "msg-act1", "role": "activity", "activityType": "progress", "content": {},
                 "subagentRunId": "sub-5", "metadata": {"ui": "bar"}}]),
          "an activity message with empty content, subagentRunId and metadata")
    c.add("valid-reasoning-message", base([user(), {"id": "msg-r1", "role": "reasoning", "content": "The user wants weather."}]),
          "a reasoning message")
    c.add("valid-reasoning-message-encrypted",
          base([{"id": "msg-r1", "role": "reasoning", "content": "", "encryptedValue": "gAAAAABk...", "subagentRunId": "sub-6",
                 "metadata": {"provider": "openai"}}]),
          "a reasoning message with encryptedValue, subagentRunId, metadata")
    c.add("valid-all-roles-conversation",
          base([{"id": "m1", "role": "system", "content": "sys"}, {"id": "m2", "role": "developer", "content": "dev"},
                user("q", "m3"), {"id": "m4", "role": "reasoning", "content": "think"},
                assistant(None, "m5", toolCalls=[tool_call("c1")]), tool_msg("r", "c1", "m6"),
                {"id": "m7", "role": "activity", "activityType": "note", "content": {"k": "v"}}, assistant("a", "m8")],
               [WEATHER_TOOL]),
          "one message of each of the seven roles")
    c.add("valid-duplicate-message-ids", base([user("a", "same"), assistant("b", "same")]),
          "two messages with the same id (the schema does not check ids)")
    # ---- user content parts
    c.add("valid-user-empty-parts", base([user([])]), "user content an empty array")
    c.add("valid-user-text-parts", base([user([{"type": "text", "text": "Describe"}, {"type": "text", "text": ""}])]),
          "user content as two text parts")
    c.add("valid-user-image-parts",
          base([user([{"type": "text", "text": "What is in these?"}, {"type": "image", "source": src_data()},
                      {"type": "image", "source": src_url()}, {"type": "image", "source": src_url(mime=None)}])]),
          "image parts with a data source and url sources (with and without mimeType)")
    c.add("valid-user-audio-parts",
          base([user([{"type": "audio", "source": src_data("audio/wav", b64("wav", 64, b"RIFF"))},
                      {"type": "audio", "source": src_url("https://cdn.example.com/a.mp3", "audio/mpeg")}])]),
          "audio parts with data and url sources")
    c.add("valid-user-video-parts",
          base([user([{"type": "video", "source": src_url("https://cdn.example.com/v.mp4", "video/mp4")},
                      {"type": "video", "source": src_data("video/webm", b64("webm", 64))}])]),
          "video parts with url and data sources")
    c.add("valid-user-document-parts",
          base([user([{"type": "document", "source": src_data("application/pdf", b64("pdf", 80, PDF_HEAD))},
                      {"type": "document", "source": src_url("https://example.com/r.pdf", None)}])]),
          "document parts with data and url sources")
    c.add("valid-user-part-metadata",
          base([user([{"type": "text", "text": "t", "metadata": {"lang": "en"}},
                      {"type": "image", "source": src_url(), "metadata": {"alt": "a cat"}},
                      {"type": "document", "source": src_url("https://e.x/d.pdf", "application/pdf"), "metadata": "caption"}])]),
          "parts with metadata (1.0.0 keeps text-part metadata; 0.0.59 strips it there)")
    c.add("valid-user-part-ids",
          base([user([{"type": "text", "id": "p1", "text": "t"}, {"type": "image", "id": "p2", "source": src_url()}])]),
          "parts with ids (a 1.0.0 member; 0.0.59 strips it)")
    c.add("valid-v1-user-file-sources",
          base([user([{"type": "image", "source": src_file()},
                      {"type": "audio", "source": src_file("files/abc-123", "gemini", "audio/ogg")},
                      {"type": "video", "source": src_file("gs://bucket/v.mp4", None, "video/mp4")},
                      {"type": "document", "source": src_file("file_011CNha8", "anthropic", "application/pdf")}])]),
          "image, audio, video, document parts with file sources (1.0.0 only)")
    c.add("valid-user-all-part-types",
          base([user([{"type": "text", "text": "All of them:"}, {"type": "image", "source": src_data()},
                      {"type": "audio", "source": src_url("https://e.x/a.wav", "audio/wav")},
                      {"type": "video", "source": src_url("https://e.x/v.mp4")},
                      {"type": "document", "source": src_data("text/plain", base64.b64encode(b"plain text").decode())}])]),
          "text, image, audio, video, document parts in one message")
    c.add("valid-v0-binary-parts",
          base([user([{"type": "binary", "mimeType": "image/png", "data": SMALL_PNG},
                      {"type": "binary", "mimeType": "application/pdf", "url": "https://e.x/f.pdf", "filename": "f.pdf"},
                      {"type": "binary", "mimeType": "text/csv", "id": "upload-77"}])]),
          "legacy binary parts with data, url+filename, id (0.0.59 only; 1.0.0 has no binary part)")
    c.add("valid-v0-part-metadata-null",
          base([user([{"type": "image", "source": src_url(), "metadata": None}])]),
          "an image part with metadata null (0.0.59 z.unknown keeps it; 1.0.0 refuses null)")
    c.add("valid-v0-text-part-metadata-null",
          base([user([{"type": "text", "text": "t", "metadata": None}])]),
          "a text part with metadata null (0.0.59 strips the member; 1.0.0 refuses null)")
    # ---- tools
    c.add("valid-tools-nested-parameters",
          base(tools=[WEATHER_TOOL, {"name": "book_trip", "description": "Book a trip.", "parameters": {
              "type": "object", "properties": {
                  "legs": {"type": "array", "items": {"type": "object", "properties": {
                      "from": {"type": "string"}, "to": {"type": "string"},
                      "date": {"type": "string", "format": "date"},
                      "passengers": {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}}]}}},
                      "required": ["from", "to"]}},
                  "budget": {"type": ["number", "null"]}},
              "required": ["legs"], "additionalProperties": False}}]),
          "two tools, one with deeply nested JSON-schema parameters")
    c.add("valid-tool-without-parameters", base(tools=[{"name": "now", "description": "Current time."}]),
          "a tool with no parameters member")
    c.add("valid-tool-parameters-non-object",
          base(tools=[{"name": "a", "description": "", "parameters": "string schema"}, {"name": "b", "description": "", "parameters": []},
                      {"name": "c", "description": "", "parameters": True}]),
          "tool parameters as a string, an array, true (any value but null)")
    c.add("valid-v0-tool-parameters-null", base(tools=[{"name": "now", "description": "Current time.", "parameters": None}]),
          "tool parameters null (0.0.59 z.any accepts it; 1.0.0 refuses null)")
    c.add("valid-tool-metadata", base(tools=[dict(WEATHER_TOOL, metadata={"category": "weather", "dangerous": False, "x": None})]),
          "a tool with metadata")
    # ---- context
    c.add("valid-context-entries",
          base(context=[{"description": "user timezone", "value": "Europe/Paris"},
                        {"description": "cart", "value": jdump({"items": [{"sku": "A1", "qty": 2}]})}]),
          "two context entries, one a JSON string")
    # ---- resume
    c.add("valid-resume-resolved-with-payload",
          base(resume=[{"interruptId": "int-1", "status": "resolved", "payload": {"approved": True, "comment": "ship it"}}]),
          "a resolved resume entry with an object payload")
    c.add("valid-resume-cancelled", base(resume=[{"interruptId": "int-1", "status": "cancelled"}]),
          "a cancelled resume entry without payload")
    c.add("valid-resume-several",
          base(messages=[user()], resume=[{"interruptId": "int-1", "status": "resolved", "payload": [1, 2, 3]},
                                          {"interruptId": "int-2", "status": "cancelled", "payload": False},
                                          {"interruptId": "int-3", "status": "resolved", "payload": 0,
                                           "metadata": {"decidedBy": "alice"}}]),
          "three resume entries: array, false and 0 payloads, metadata")
    c.add("valid-resume-empty", base(resume=[]), "resume []")
    c.add("valid-v0-resume-payload-null", base(resume=[{"interruptId": "int-1", "status": "resolved", "payload": None}]),
          "a resume payload null (0.0.59 z.any accepts it; 1.0.0 refuses null)")
    # ---- unknown members
    c.add("valid-unknown-top-level-members", base([user()], clientVersion="2.3.1", x_trace={"id": 7}, agentId="weather"),
          "unknown top-level members (1.0.0 keeps them; 0.0.59 strips them)")
    c.add("valid-unknown-nested-members",
          base([dict(user([{"type": "text", "text": "t", "lang": "en"}, {"type": "image", "source": dict(src_url(), cache="max"), "alt": "x"}]),
                     extra={"a": 1}),
                assistant(None, toolCalls=[dict(tool_call(), index=0, function={"name": "f", "arguments": "{}", "strict": True})]),
                tool_msg(status="ok")],
               [dict(WEATHER_TOOL, strict=True)], [{"description": "d", "value": "v", "priority": 1}],
               resume=[{"interruptId": "i", "status": "resolved", "by": "bob"}]),
          "unknown members in a message, parts, a source, a toolCall, its function, a tool, a context entry, a resume entry")
    c.add("valid-proto-key-top-level", '{"threadId":"%s","runId":"%s","messages":[],"tools":[],"context":[],"__proto__":{"polluted":true}}' % (THREAD, RUN),
          "a top-level __proto__ member (both drop it)")
    c.add("valid-proto-key-in-state-and-metadata",
          '{"threadId":"%s","runId":"%s","messages":[{"id":"m","role":"user","content":"x","metadata":{"__proto__":{"p":1},"a":1}}],'
          '"tools":[],"context":[],"state":{"__proto__":{"polluted":true},"ok":1}}' % (THREAD, RUN),
          "__proto__ inside state (kept by both) and inside message metadata (1.0.0 keeps it, 0.0.59's z.record drops it)")
    c.add("valid-duplicate-keys-last-wins",
          '{"threadId":"first","runId":"%s","messages":[{"id":"m","role":"assistant","role":"user","content":"x"}],"tools":[],'
          '"context":[],"threadId":"%s","state":{"a":1,"a":2}}' % (RUN, THREAD),
          "duplicate keys at the top level, in a message (role), in state: the last one wins")
    c.add("valid-duplicate-messages-key", '{"threadId":"%s","runId":"%s","messages":7,"tools":[],"context":[],"messages":[]}' % (THREAD, RUN),
          "messages given twice, first as a number (JSON.parse keeps the last: valid)")
    # ---- strings, escapes, unicode, bytes
    c.add("valid-unicode-strings",
          base([user("Grüße aus Köln — ¿qué tal? 東京タワー 🚀👩‍👩‍👧 مرحبا שלום e\u0301 \u00a0nbsp \ufeffzwnbsp", "msg-ü-1",
                     name="Zoë")], state={"ключ": "значение", "😀": "emoji key", "\uffff": "max BMP"}),
          "non-ASCII text, emoji ZWJ sequences, RTL, combining marks, non-ASCII ids and keys")
    c.add("valid-escapes-all",
          '{"threadId":"t\\"h\\\\r\\/ead","runId":"\\b\\f\\n\\r\\t","messages":[{"id":"\\u0000\\u001f\\u007f","role":"\\u0075ser",'
          '"content":"line1\\nline2\\ttab \\u00e9\\u00E9 \\u2028\\u2029 \\ud83d\\ude00"}],"tools":[],"context":[]}',
          "every JSON escape, \\u escapes in upper and lower case, an escaped role name, a surrogate pair")
    c.add("valid-lone-surrogate-escapes",
          '{"threadId":"%s","runId":"%s","messages":[{"id":"m","role":"user","content":"hi \\ud800 there \\udfff \\udc00\\ud800"}],'
          '"tools":[],"context":[]}' % (THREAD, RUN),
          "lone surrogate escapes in a string (JSON.parse keeps them)")
    c.add("valid-raw-control-like-chars", base([user("del:\u007f c1:\u0085 ls:\u2028 ps:\u2029 bom-like:\ufeff")]),
          "raw U+007F, U+0085, U+2028, U+2029, U+FEFF inside strings")
    body = jdump(base([user("caf@ and @", "msg-@")])).encode()
    c.add("valid-invalid-utf8-in-strings-replaced",
          body.replace(b"@", b"\xff", 1).replace(b"@", b"\xc3\x28", 1).replace(b"@", b"\xed\xa0\x80", 1),
          "invalid UTF-8 bytes inside strings (0xFF, a broken 2-byte sequence, an encoded surrogate): decoded as U+FFFD")
    c.add("valid-bom-prefix", b"\xef\xbb\xbf" + jdump(base([user()])).encode(), "a UTF-8 BOM before the body (the decoder drops it)")
    c.add("valid-numbers-in-state",
          '{"threadId":"%s","runId":"%s","messages":[],"tools":[],"context":[],"state":{"int":42,"neg":-7,"zero":-0,"frac":0.1,'
          '"exp":1E+2,"small":1e-7,"big":1e21,"huge":1e400,"tiny":1e-400,"beyond":9007199254740993,"long":123456789012345678901234567890,'
          '"dec":1.50,"neg_exp":-2.5e-3}}' % (THREAD, RUN),
          "numbers in state: -0, exponents, 1e400 (Infinity: printed null), 2^53+1 (rounded), trailing zeros")
    c.add("valid-deep-nesting-in-state",
          '{"threadId":"%s","runId":"%s","messages":[],"tools":[],"context":[],"state":%s}' % (THREAD, RUN, '{"a":[' * 500 + "0" + "]}" * 500),
          "state nested 1000 levels (objects and arrays)")
    # ---- whitespace and key order
    full = base([user("hi"), assistant("hello", "msg-a1")], [WEATHER_TOOL], [{"description": "d", "value": "v"}],
                state={"k": [1, 2]}, forwardedProps={"f": True})
    c.add("valid-pretty-printed", json.dumps(full, indent=2, ensure_ascii=False) + "\n", "pretty-printed with 2-space indents")
    c.add("valid-tabs-and-crlf", json.dumps(full, indent="\t", ensure_ascii=False).replace("\n", "\r\n") + "\r\n",
          "tab indents and CRLF line ends")
    c.add("valid-whitespace-everywhere",
          " \t\r\n" + json.dumps(full, separators=(" \n, \t", " \r\n: \t"), ensure_ascii=False) + " \n\t\r ",
          "the four JSON whitespace characters around every token and the body")
    c.add("valid-reversed-key-order", {k: full[k] for k in reversed(list(full))}, "top-level members in reverse order (ids last)")
    c.add("valid-messages-before-ids",
          {"messages": [{"content": "hi", "role": "user", "id": "msg-u1"}], "context": [], "tools": [], "runId": RUN, "threadId": THREAD},
          "messages first, ids last; message members with role after content")
    c.add("valid-role-last-in-messages",
          base([{"id": "m1", "content": "sys", "role": "system"}, {"toolCalls": [tool_call()], "id": "m2", "role": "assistant"},
                {"toolCallId": "call-1", "content": "r", "id": "m3", "role": "tool"}]),
          "each message's role after its other members (the discriminator comes last)")


def kb(n):
    return f"{round(n / 1_000_000)}mb" if n >= 1_000_000 else f"{round(n / 1000)}kb"


def escaped(s):
    """`s` as it appears between the quotes of a compact JSON string."""
    return json.dumps(s, ensure_ascii=False)[1:-1]


def large_cases(c, result_n=100_000, image_n=200_000, params_n=80, history_n=200, after_n=28_000, word="large"):
    """The large valid bodies and the errors before / after a large value.
    `after_n` is the size of the value an error follows (above the 16 KiB
    and smaller buffers a streaming checker reads with; the --large variants
    put the same errors after 2 MB); `word` names it."""
    big_result = tool_result_text(f"tool-result-{result_n}", result_n)
    c.add(f"valid-large-tool-result-{kb(result_n)}",
          base([user("Search the catalogue"), assistant(None, toolCalls=[tool_call("call-s", "search", '{"q":"all"}')]),
                tool_msg(big_result, "call-s", "msg-t1"), assistant("Here is what I found.", "msg-a2")]),
          f"a history with one tool result of {len(big_result)} characters (stringified JSON: many escapes)")
    img = b64(f"image-{image_n}", image_n, PNG_HEAD)
    c.add(f"valid-large-user-image-{kb(image_n)}",
          base([user([{"type": "text", "text": "What is in this picture?"},
                      {"type": "image", "source": {"type": "data", "value": img, "mimeType": "image/png"}}])]),
          f"a user message with a {len(img)}-character base64 image")
    if params_n:
        c.add("valid-large-tool-parameters", base([user()], [WEATHER_TOOL, {"name": "search_catalogue",
                                                                           "description": "Search with filters.",
                                                                           "parameters": large_parameters(params_n)}]),
              f"a tool whose parameters schema has {params_n} properties")
    msgs = []
    for i in range(history_n):
        k = i % 4
        if k == 0:
            msgs.append(user(f"Question {i}: and the weather in city #{i}?", f"msg-{i}"))
        elif k == 1:
            msgs.append(assistant(None, f"msg-{i}", toolCalls=[tool_call(f"call-{i}", "get_weather", f'{{"city":"City {i}"}}')]))
        elif k == 2:
            msgs.append(tool_msg(f'{{"temp":{i % 35},"sky":"clear"}}', f"call-{i - 1}", f"msg-{i}"))
        else:
            msgs.append(assistant(f"It is {(i - 1) % 35}°C in City {i - 2}.", f"msg-{i}"))
    c.add(f"valid-long-history-{history_n}-messages", base(msgs, [WEATHER_TOOL]),
          f"a history of {history_n} messages (user, toolCall, tool, answer)")

    mid = tool_result_text(f"after-{after_n}", after_n)
    hist = [user("Search"), assistant(None, toolCalls=[tool_call("call-s", "search", "{}")]), tool_msg(mid, "call-s", "msg-t1")]
    sz = f"{len(escaped(mid))}-byte"
    c.add(f"schema-thread-id-number-before-{word}-tool-result",
          {"threadId": 7, "runId": RUN, "messages": hist, "tools": [], "context": []},
          f"threadId a number, first member, before a {sz} tool result")
    c.add(f"schema-unknown-role-after-{word}-tool-result",
          base(hist + [{"id": "msg-x", "role": "critic", "content": "late"}]),
          f"a message of unknown role after a {sz} tool result")
    c.add(f"schema-run-id-missing-around-{word}-tool-result",
          {"threadId": THREAD, "messages": hist, "tools": [], "context": []},
          f"no runId; the other members are around a {sz} tool result")
    c.add(f"schema-resume-bad-status-after-{word}-tool-result",
          base(hist, resume=[{"interruptId": "int-1", "status": "approved"}]),
          f"a resume entry with status approved after a {sz} tool result")
    img2 = b64(f"image-after-{after_n}", after_n, PNG_HEAD)
    c.add(f"schema-bad-content-part-after-{word}-image",
          base([user([{"type": "image", "source": {"type": "data", "value": img2, "mimeType": "image/png"}},
                      {"type": "sticker", "source": src_url()}])]),
          f"a part of unknown type after a {len(img2)}-character base64 image")
    text = jdump(base(hist))
    esc = escaped(mid)
    start = text.index(esc)
    c.add(f"json-truncated-in-{word}-string", text[: start + len(esc) // 2],
          f"the body cut off in the middle of a {sz} tool result string")
    at = start + len(esc) - 1000
    while not (text[at - 1].isascii() and text[at - 1].isalpha() and text[at].isascii() and text[at].isalpha()):
        at += 1  # between two letters: not inside an escape sequence
    c.add(f"json-bad-escape-late-in-{word}-string", text[:at] + "\\x" + text[at:],
          f"an invalid escape \\x about 1000 bytes before the end of a {sz} tool result string")
    bad = jdump({"threadId": 7, "runId": RUN, "messages": hist, "tools": [], "context": []})
    c.add(f"json-garbage-after-schema-error-and-{word}-value", bad + ",",
          f"threadId a number first, a {sz} tool result, then a comma after the body: JSON.parse fails first, stage json")


def json_cases(c):
    good = jdump(base([user("hello"), assistant("hi there", "msg-a1")], [WEATHER_TOOL]))
    c.add("json-empty-file", b"", "an empty body")
    c.add("json-whitespace-only", " \r\n\t\n", "only whitespace")
    c.add("json-bom-only", b"\xef\xbb\xbf", "only a UTF-8 BOM")
    c.add("json-truncated-after-comma", good[: good.index('"messages"')], "cut after the comma before messages")
    c.add("json-truncated-in-key", good[: good.index('"messages"') + 5], "cut inside a key")
    c.add("json-truncated-in-string", good[: good.index("hello") + 3], "cut inside a string value")
    c.add("json-truncated-in-number", '{"threadId":"t","runId":"r","messages":[],"tools":[],"context":[],"state":{"n":-', "cut after a minus sign")
    c.add("json-missing-final-brace", good[:-1], "the last } missing")
    c.add("json-trailing-garbage", good + "x", "a letter after the body")
    c.add("json-trailing-second-object", good + "{}", "a second value after the body")
    c.add("json-trailing-comma-in-object", good[:-1] + ",}", "a trailing comma before the last }")
    assert '"context":[]' in good
    c.add("json-trailing-comma-in-array", good.replace('"context":[]', '"context":[{"description":"d","value":"v"},]'),
          "a trailing comma inside the context array")
    c.add("json-string-missing-closing-quote", '{"threadId":"%s,"runId":"%s","messages":[],"tools":[],"context":[]}' % (THREAD, RUN),
          "threadId's string missing its closing quote (it ends at runId's opening quote)")
    c.add("json-unterminated-string", '{"threadId":"t","runId":"r","messages":[],"tools":[],"context":[],"state":"open}',
          "the last string never closed: the body ends inside it")
    c.add("json-bad-escape", good.replace("hello", "hel\\lo"), "an invalid escape \\l")
    c.add("json-bad-unicode-escape", good.replace("hello", "hel\\u12G4lo"), "a \\u escape with a non-hex digit")
    c.add("json-raw-newline-in-string", good.replace("hello", "hel\nlo"), "a raw line feed inside a string")
    c.add("json-raw-nul-in-string", good.replace("hello", "hel\x00lo"), "a raw NUL inside a string")
    c.add("json-single-quotes", good.replace('"hello"', "'hello'"), "a single-quoted string")
    c.add("json-unquoted-key", good.replace('"threadId"', "threadId"), "an unquoted key")
    c.add("json-missing-colon", good.replace('"runId":', '"runId" '), "a key without a colon")
    c.add("json-missing-comma", good.replace(',"runId"', ' "runId"'), "two members without a comma")
    c.add("json-comment", good.replace("{", "{/* run */", 1), "a /* */ comment")
    c.add("json-nan", good[:-1] + ',"state":NaN}', "NaN as a value")
    c.add("json-leading-zero", good[:-1] + ',"state":{"n":012}}', "a number with a leading zero")
    c.add("json-bare-decimal-point", good[:-1] + ',"state":{"n":1.}}', "a number ending in a decimal point")
    c.add("json-python-literals", good[:-1] + ',"state":{"n":None,"t":True}}', "None and True")
    c.add("json-invalid-utf8-between-tokens", good.encode()[:-1] + b",\xff}", "a 0xFF byte between tokens (decoded to U+FFFD, not JSON)")
    c.add("json-invalid-utf8-before-body", b"\xc3" + good.encode(), "a lone UTF-8 lead byte before the body")
    c.add("json-utf16le-body", b"\xff\xfe" + good.encode("utf-16-le"), "the body in UTF-16LE with its BOM")
    c.add("json-double-bom", b"\xef\xbb\xbf\xef\xbb\xbf" + good.encode(), "two UTF-8 BOMs: the second is U+FEFF, not whitespace")
    c.add("json-form-feed-whitespace", good.replace(",", ",\f", 1), "a form feed used as whitespace")
    c.add("json-nbsp-whitespace", good.replace(",", ",\u00a0", 1), "a no-break space used as whitespace")
    c.add("json-unclosed-deep-nesting", '{"threadId":"t","runId":"r","messages":[],"tools":[],"context":[],"state":' + "[" * 20_000,
          "state opens 20,000 arrays and never closes them")
    c.add("json-mismatched-deep-nesting",
          '{"threadId":"t","runId":"r","messages":[],"tools":[],"context":[],"state":' + '{"a":[' * 1000 + "0" + "]}" * 999 + "}}",
          "state nested 2000 levels, closed with a } where a ] belongs")
    c.add("json-schema-error-then-syntax-error",
          '{"threadId":null,"runId":5,"messages":"no","tools":{},"context":7,"state":}',
          "every member of the wrong type, then a missing value: JSON.parse fails before the schema runs")


def schema_cases(c):
    c.add("schema-bare-array", [base()], "a JSON array holding a valid body")
    c.add("schema-null-body", None, "the JSON value null")
    c.add("schema-string-body", jdump(jdump(base())), "the body as a JSON string (double-encoded)")
    c.add("schema-empty-object", {}, "{}")
    # ---- ids and messages
    c.add("schema-missing-thread-id", {"runId": RUN, "messages": [], "tools": [], "context": []}, "no threadId")
    c.add("schema-thread-id-number", base() | {"threadId": 12345}, "threadId a number")
    c.add("schema-missing-run-id", {"threadId": THREAD, "messages": [], "tools": [], "context": []}, "no runId")
    c.add("schema-run-id-object", base() | {"runId": {"id": RUN}}, "runId an object")
    c.add("schema-parent-run-id-number", base(parentRunId=3), "parentRunId a number")
    c.add("schema-parent-run-id-null", base(parentRunId=None), "parentRunId null")
    c.add("schema-missing-messages", {"threadId": THREAD, "runId": RUN, "tools": [], "context": []}, "no messages")
    c.add("schema-messages-object", base() | {"messages": {"0": user()}}, "messages an object")
    c.add("schema-message-not-object", base(["hello"]), "a message that is a string")
    c.add("schema-message-missing-id", base([{"role": "user", "content": "x"}]), "a message without id")
    c.add("schema-message-id-number", base([user(mid=1)]), "a message id that is a number")
    c.add("schema-message-missing-role", base([{"id": "m", "content": "x"}]), "a message without role")
    c.add("schema-unknown-role", base([user(), {"id": "m2", "role": "critic", "content": "x"}]), "a message of role critic")
    c.add("schema-role-wrong-case", base([{"id": "m", "role": "User", "content": "x"}]), "role User (roles are lower case)")
    c.add("schema-role-function", base([{"id": "m", "role": "function", "content": "x", "name": "f"}]),
          "role function (an OpenAI role that AG-UI does not have)")
    c.add("schema-message-metadata-null", base([user(metadata=None)]), "message metadata null")
    c.add("schema-message-metadata-array", base([user(metadata=["a"])]), "message metadata an array")
    c.add("schema-subagent-run-id-null", base([user(subagentRunId=None)]), "message subagentRunId null")
    # ---- per role
    c.add("schema-user-missing-content", base([{"id": "m", "role": "user"}]), "a user message without content")
    c.add("schema-user-content-object", base([user({"type": "text", "text": "x"})]), "user content a single part object, not an array")
    c.add("schema-system-missing-content", base([{"id": "m", "role": "system"}]), "a system message without content")
    c.add("schema-developer-content-parts", base([{"id": "m", "role": "developer", "content": [{"type": "text", "text": "x"}]}]),
          "developer content as parts (a string only)")
    c.add("schema-assistant-content-parts", base([assistant([{"type": "text", "text": "x"}])]), "assistant content as parts (a string only)")
    c.add("schema-tool-calls-not-array", base([assistant(None, toolCalls=tool_call())]), "toolCalls a single object")
    c.add("schema-tool-call-wrong-type", base([assistant(None, toolCalls=[tool_call() | {"type": "tool"}])]), "a toolCall of type tool")
    c.add("schema-tool-call-missing-function", base([assistant(None, toolCalls=[{"id": "c", "type": "function"}])]),
          "a toolCall without function")
    c.add("schema-tool-call-arguments-object",
          base([assistant(None, toolCalls=[{"id": "c", "type": "function", "function": {"name": "f", "arguments": {"city": "Paris"}}}])]),
          "toolCall arguments an object (it must be a JSON string)")
    c.add("schema-tool-message-missing-tool-call-id", base([{"id": "m", "role": "tool", "content": "r"}]), "a tool message without toolCallId")
    c.add("schema-tool-message-error-number", base([tool_msg(error=500)]), "tool message error a number")
    c.add("schema-activity-content-string", base([{"id": "m", "role": "activity", "activityType": "t", "content": "x"}]),
          "activity content a string (an object only)")
    c.add("schema-activity-content-array", base([{"id": "m", "role": "activity", "activityType": "t", "content": []}]),
          "activity content an array")
    c.add("schema-activity-missing-type", base([{"id": "m", "role": "activity", "content": {}}]), "an activity message without activityType")
    c.add("schema-reasoning-missing-content", base([{"id": "m", "role": "reasoning"}]), "a reasoning message without content")
    # ---- content parts and sources
    c.add("schema-part-unknown-type", base([user([{"type": "text", "text": "ok"}, {"type": "sticker", "id": "s1"}])]),
          "a part of type sticker")
    c.add("schema-part-missing-type", base([user([{"text": "x"}])]), "a part without type")
    c.add("schema-part-not-object", base([user(["plain string"])]), "a part that is a string")
    c.add("schema-text-part-missing-text", base([user([{"type": "text"}])]), "a text part without text")
    c.add("schema-image-part-missing-source", base([user([{"type": "image", "url": "https://e.x/a.png"}])]),
          "an image part with url but no source")
    c.add("schema-image-part-openai-shape", base([user([{"type": "image_url", "image_url": {"url": "https://e.x/a.png"}}])]),
          "an OpenAI-style image_url part")
    c.add("schema-source-unknown-type", base([user([{"type": "image", "source": {"type": "base64", "value": SMALL_PNG, "mimeType": "image/png"}}])]),
          "a source of type base64")
    c.add("schema-data-source-missing-mime-type", base([user([{"type": "audio", "source": {"type": "data", "value": SMALL_PNG}}])]),
          "a data source without mimeType (required for data)")
    c.add("schema-url-source-value-number", base([user([{"type": "video", "source": {"type": "url", "value": 7}}])]),
          "a url source whose value is a number")
    c.add("schema-part-metadata-null-both",
          base([user([{"type": "image", "source": src_url(), "metadata": None}, {"type": "sticker"}])]),
          "image metadata null (accepted by 0.0.59 only) then an unknown part (refused by both)")
    c.add("schema-binary-part-without-payload", base([user([{"type": "binary", "mimeType": "image/png"}])]),
          "a binary part with none of id, url, data (1.0.0 has no binary; 0.0.59 wants one)")
    c.add("schema-binary-part-empty-data", base([user([{"type": "binary", "mimeType": "image/png", "data": ""}])]),
          "a binary part whose only payload is data \"\" (0.0.59 tests truthiness)")
    c.add("schema-file-source-then-binary",
          base([user([{"type": "image", "source": src_file()}, {"type": "binary", "mimeType": "image/png", "id": "f"}])]),
          "a file source (1.0.0 only) and a binary part (0.0.59 only) in one message")
    # ---- tools
    c.add("schema-tools-object", base() | {"tools": {"get_weather": WEATHER_TOOL}}, "tools an object keyed by name")
    c.add("schema-tools-null", base() | {"tools": None}, "tools null (1.0.0's default is for an absent member only)")
    c.add("schema-tool-missing-name", base(tools=[{"description": "d", "parameters": {}}]), "a tool without name")
    c.add("schema-tool-missing-description", base(tools=[{"name": "f", "parameters": {}}]), "a tool without description")
    c.add("schema-tool-metadata-array", base(tools=[dict(WEATHER_TOOL, metadata=["x"])]), "tool metadata an array")
    c.add("schema-tool-openai-shape",
          base(tools=[{"type": "function", "function": WEATHER_TOOL}]), "a tool in OpenAI's {type, function} shape")
    # ---- context
    c.add("schema-context-not-array", base() | {"context": {"description": "d", "value": "v"}}, "context a single object")
    c.add("schema-context-missing-value", base(context=[{"description": "d"}]), "a context entry without value")
    c.add("schema-context-value-object", base(context=[{"description": "cart", "value": {"items": []}}]),
          "a context value that is an object (a string only)")
    # ---- resume
    c.add("schema-resume-bad-status", base(resume=[{"interruptId": "int-1", "status": "approved"}]), "resume status approved")
    c.add("schema-resume-missing-status", base(resume=[{"interruptId": "int-1", "payload": {}}]), "a resume entry without status")
    c.add("schema-resume-missing-interrupt-id", base(resume=[{"status": "resolved"}]), "a resume entry without interruptId")
    c.add("schema-resume-not-array", base(resume={"interruptId": "int-1", "status": "resolved"}), "resume a single object")
    c.add("schema-resume-metadata-null", base(resume=[{"interruptId": "i", "status": "cancelled", "metadata": None}]),
          "resume entry metadata null")
    c.add("schema-second-resume-entry-bad",
          base(resume=[{"interruptId": "int-1", "status": "resolved", "payload": {"ok": True}}, {"interruptId": "int-2", "status": "done"}]),
          "a good resume entry, then one with status done")
    # ---- decoded bytes that break the schema
    c.add("schema-invalid-utf8-in-key", b'{"threadId\xff":"t","runId":"r","messages":[],"tools":[],"context":[]}',
          "0xFF inside the threadId key: the key decodes to threadId + U+FFFD, so threadId is missing")
    c.add("schema-escaped-key-wrong-type", '{"\\u0074hreadId":1,"runId":"r","messages":[],"tools":[],"context":[]}',
          "threadId spelled with a \\u escape in the key, given a number")
    c.add("schema-duplicate-key-last-bad", '{"threadId":"%s","runId":"%s","messages":[],"tools":[],"context":[],"runId":null}' % (THREAD, RUN),
          "runId given twice, the last one null")


def write_manifest(path, cases):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("name\tdescription\tcategory\tverdict\tverdict_0.0.59\n")
        for name, _, desc in cases:
            cat, v1, v0 = verdicts(name)
            word = lambda v: "valid" if v == "valid" else "invalid"
            f.write(f"{name}\t{desc}\t{cat}\t{word(v1)}\t{word(v0)}\n")


def write_dir(out, cases):
    os.makedirs(out, exist_ok=True)
    names = {n for n, _, _ in cases}
    removed = 0
    for fn in os.listdir(out):
        stem = None
        for ext in (".json", ".expected", ".expected-0.0.59"):
            if fn.endswith(ext):
                stem = fn[: -len(ext)]
        if stem is not None and stem not in names:
            os.remove(os.path.join(out, fn))
            removed += 1
    total = 0
    for name, data, _ in cases:
        with open(os.path.join(out, name + ".json"), "wb") as f:
            f.write(data)
        total += len(data)
    write_manifest(os.path.join(out, "MANIFEST.tsv"), cases)
    print(f"gen_requests: {out}: {len(cases)} bodies, {total} bytes ({removed} stale files removed)")


# -------------------------------------------------------------------- check


def read_answer(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    if not text.endswith("\n"):
        raise ValueError("no final newline")
    lines = text[:-1].split("\n")
    result = json.loads(lines[-1])
    return lines, result


def check(out):
    """Verify the stored answers against the names; print the counts."""
    rows = []
    with open(os.path.join(out, "MANIFEST.tsv"), encoding="utf-8") as f:
        next(f)
        for line in f:
            rows.append(line.rstrip("\n").split("\t"))
    bad = []
    bodies = sorted(fn[:-5] for fn in os.listdir(out) if fn.endswith(".json"))
    if sorted(r[0] for r in rows) != bodies:
        bad.append("MANIFEST.tsv and the *.json files disagree")
    counts = {("1.0.0", k): 0 for k in ("ok", "json", "schema")}
    counts.update({("0.0.59", k): 0 for k in ("ok", "json", "schema")})
    differ_verdict, differ_output = [], []
    for name, desc, cat, mv1, mv0 in rows:
        want_cat, w1, w0 = verdicts(name)
        if cat != want_cat:
            bad.append(f"{name}: manifest category {cat}, name says {want_cat}")
        got = {}
        for ref, suffix, want in (("1.0.0", ".expected", w1), ("0.0.59", ".expected-0.0.59", w0)):
            p = os.path.join(out, name + suffix)
            if not os.path.exists(p):
                bad.append(f"{name}: no {suffix}")
                continue
            try:
                lines, res = read_answer(p)
            except (ValueError, json.JSONDecodeError) as e:
                bad.append(f"{name}{suffix}: unreadable answer ({e})")
                continue
            if res.get("result") == "ok":
                stage = "valid"
                if len(lines) != 2:
                    bad.append(f"{name}{suffix}: ok with {len(lines) - 1} input lines")
            else:
                stage = res.get("stage")
                if len(lines) != 1 or res.get("index") != 0:
                    bad.append(f"{name}{suffix}: error answer of {len(lines)} lines, index {res.get('index')}")
            counts[(ref, "ok" if stage == "valid" else stage)] = counts.get((ref, "ok" if stage == "valid" else stage), 0) + 1
            got[ref] = (stage, lines)
            if stage != want:
                bad.append(f"{name}{suffix}: {stage}, name says {want}")
        if len(got) == 2:
            (s1, l1), (s0, l0) = got["1.0.0"], got["0.0.59"]
            if s1 != s0:
                differ_verdict.append(name)
            elif s1 == "valid" and l1 != l0:
                differ_output.append(name)  # (error messages differ anyway: zod v4 / v3)
    n = len(rows)
    print(f"| | 1.0.0 | 0.0.59 |\n|---|---:|---:|")
    for k, label in (("ok", "valid (`ok`)"), ("json", "`stage: json`"), ("schema", "`stage: schema`")):
        print(f"| {label} | {counts[('1.0.0', k)]} | {counts[('0.0.59', k)]} |")
    print(f"| total | {n} | {n} |")
    print(f"\nverdict differs between versions: {len(differ_verdict)}; "
          f"both valid but parsed input differs: {len(differ_output)}; identical answers: {n - len(differ_verdict) - len(differ_output)}")
    if os.environ.get("VERBOSE"):
        print("verdict differs:", " ".join(differ_verdict))
        print("output differs:", " ".join(differ_output))
    for b in bad:
        print("MISMATCH " + b, file=sys.stderr)
    return 1 if bad else 0


# --------------------------------------------------------------------- main


def main(argv):
    out = os.path.join(ROOT, "tests", "corpus", "requests")
    large_out = os.path.join(ROOT, "target", "requests-large")
    large = False
    do_check = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--out":
            i += 1
            out = argv[i]
        elif a == "--large":
            large = True
        elif a == "--large-out":
            i += 1
            large_out = argv[i]
        elif a == "--check":
            do_check = True
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                i += 1
                out = argv[i]
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            print(f"gen_requests: unknown argument {a}", file=sys.stderr)
            return 2
        i += 1
    if do_check:
        return check(out)
    c = Corpus()
    valid_cases(c)
    large_cases(c)
    json_cases(c)
    schema_cases(c)
    for name, _, _ in c.cases:
        verdicts(name)
    write_dir(out, c.cases)
    if large:
        g = Corpus()
        large_cases(g, result_n=2_000_000, image_n=4_000_000, params_n=0, history_n=5000, after_n=2_000_000, word="2mb")
        big = tool_result_text("tool-result-11mib", 11 * 1024 * 1024)
        g.add("valid-large-tool-result-11mib",
              base([user("Dump it"), assistant(None, toolCalls=[tool_call("c", "dump", "{}")]), tool_msg(big, "c", "msg-t1")]),
              f"a tool result of {len(big)} characters (over the 10 MiB SSE buffer cap, which requests do not have)")
        write_dir(large_out, g.cases)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
