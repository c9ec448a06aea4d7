// The real client: runs `HttpAgent` (@ag-ui/client 1.0.0) against URL, as
// an application does, and prints one JSON line: the events it handed to
// the subscriber (their types), the RUN_ERROR it saw (code and message),
// the error `runAgent` threw, if any, and the texts its messages hold at
// the end (each message's content, each tool call's arguments).
//
//   node agent_client.mjs URL
//
// Run from a directory whose node_modules has @ag-ui/client (the oracle's,
// tests/corpus/oracle: copy this file there).
import { HttpAgent } from "@ag-ui/client";

const url = process.argv[2];
if (!url) {
  console.error("usage: node agent_client.mjs URL");
  process.exit(2);
}
const agent = new HttpAgent({ url, threadId: "t" });
const events = [];
let runError = null;
let thrown = null;
try {
  await agent.runAgent(
    { runId: "r" },
    {
      onEvent({ event }) {
        events.push(event.type);
      },
      onRunErrorEvent({ event }) {
        runError = { code: event.code ?? null, message: event.message };
      },
    },
  );
} catch (e) {
  thrown = String((e && e.message) || e);
}
const texts = agent.messages.flatMap((m) => [
  ...(typeof m.content === "string" ? [m.content] : []),
  ...(m.toolCalls ?? []).map((c) => c.function.arguments),
]);
console.log(JSON.stringify({ events, runError, thrown, texts }));
