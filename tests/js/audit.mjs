// The reference GraphQL-over-HTTP audit (graphql-http's serverAudits) against a running newsagg API: one JSON line
// per audit ({id, name, status, reason, status code, body}), then a summary line such as
// "61 ok, 0 warnings, 0 errors of 61". Exits 1 when any audit is not ok.
//
//   node audit.mjs <http url of /graphql>
import { serverAudits } from "graphql-http";

const [url] = process.argv.slice(2);
const results = await Promise.all(serverAudits({ url }).map(({ fn }) => fn()));
for (const result of results) {
  const line = { id: result.id, name: result.name, status: result.status };
  if (result.status !== "ok") {
    line.reason = result.reason;
    line.response = { status: result.response.status, contentType: result.response.headers.get("content-type") };
  }
  process.stdout.write(JSON.stringify(line) + "\n");
}
const count = (status) => results.filter((result) => result.status === status).length;
process.stdout.write(`${count("ok")} ok, ${count("warn")} warnings, ${count("error")} errors of ${results.length}\n`);
process.exit(count("ok") === results.length ? 0 : 1);
