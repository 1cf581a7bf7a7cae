// The reference graphql-ws client against a running newsagg API: signs in through connectionParams, asks who it is,
// then subscribes and prints every frame as one JSON line, until `count` results arrived.
//
//   node subscribe.mjs <ws url> <bearer token> <subscription document> [count]
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const [url, token, query, count = "1"] = process.argv.slice(2);
const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

const client = createClient({
  url,
  webSocketImpl: WebSocket,
  connectionParams: { authorization: `Bearer ${token}` },
  lazy: false,
  retryAttempts: 0,
  on: {
    connected: () => print({ connected: true }),
    ping: (received) => received && print({ ping: true }),
    closed: (event) => print({ closed: event.code }),
  },
});

try {
  print({ viewer: await client.iterate({ query: "{ viewer { email } }" }).next().then((r) => r.value) });
  let left = Number(count);
  for await (const result of client.iterate({ query })) {
    print({ next: result });
    if (--left === 0) break;
  }
  print({ complete: true });
} catch (error) {
  print({ error: error instanceof Error ? error.message : error });
  process.exitCode = 1;
} finally {
  await client.dispose();
}
