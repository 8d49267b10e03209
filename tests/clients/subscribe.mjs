// The console's subscription client against a running Atrium: graphql-ws's createClient with
// the options web/src/apollo.ts gives it (lazy, and web/src/reconnect.mjs: retries, waits,
// keep-alive), over the WebSocket a browser has (Node's, under --experimental-websocket).
// Sends the operation as Apollo's GraphQLWsLink does behind the console's PersistedQueryLink:
// the document's text, its variables and the persisted-query extension with its hash.
// Usage: node --experimental-websocket subscribe.mjs WS_URL OPERATION_JSON
//   OPERATION_JSON: {"query": ..., "variables": {...}, "operationName": ...}
// Prints one JSON object per line: {"event": "connecting" | "connected" | "closed" | "next" |
// "error" | "complete", ...}; "connected" says whether it was a retry, "closed" the code.
// Runs until its input closes (the test stops it by closing stdin) or the subscription ends.
import { createHash } from "node:crypto";

import { createClient } from "graphql-ws";

import { reconnect } from "../../web/src/reconnect.mjs";

const [url, operationJson] = process.argv.slice(2);
const operation = JSON.parse(operationJson);
const say = (event, details = {}) => process.stdout.write(JSON.stringify({ event, ...details }) + "\n");

const client = createClient({
  url,
  lazy: true,
  ...reconnect,
  on: {
    connecting: (isRetry) => say("connecting", { retry: isRetry }),
    connected: (_socket, _payload, wasRetry) => say("connected", { retry: wasRetry }),
    closed: (event) => say("closed", { code: event?.code ?? null, reason: event?.reason ?? "" }),
  },
});

const sha256Hash = createHash("sha256").update(operation.query).digest("hex");
const dispose = client.subscribe(
  { ...operation, extensions: { persistedQuery: { version: 1, sha256Hash } } },
  {
    next: (value) => say("next", { value }),
    error: (error) => {
      say("error", { error: String(error?.message ?? error?.code ?? JSON.stringify(error)) });
      process.exit(1);
    },
    complete: () => {
      say("complete");
      process.exit(0);
    },
  },
);

process.stdin.resume();
process.stdin.on("end", async () => {
  dispose();
  await client.dispose();
  process.exit(0);
});
