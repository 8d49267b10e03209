// graphql-http's server audit (the GraphQL-over-HTTP conformance suite) against a URL.
// Usage: node audit.mjs GRAPHQL_URL
// Prints one JSON object: `audits`, every audit with its id, name, status (ok, or notice,
// warn, error for a MAY, SHOULD, MUST not met), its reason, and for those not met the answer
// the audit got (status, content type, body); and `fetchAccept`, the Accept header Node's
// fetch sends when the caller gives none (as the audit's check 80D8 does).
import http from "node:http";

import { auditServer } from "graphql-http";

async function answer(response) {
  if (!response) return null;
  let body = null;
  try {
    body = await response.clone().text();
  } catch {
    // already read by the audit
  }
  return {
    status: response.status,
    contentType: response.headers.get("content-type"),
    body,
  };
}

// What a request without Accept carries on the wire once fetch has sent it.
async function fetchAccept() {
  const server = http.createServer((request, response) => {
    response.end(JSON.stringify(request.headers.accept ?? null));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const response = await fetch(`http://127.0.0.1:${server.address().port}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    return JSON.parse(await response.text());
  } finally {
    server.close();
  }
}

const results = await auditServer({ url: process.argv[2] });
const audits = [];
for (const { id, name, status, reason, response } of results) {
  audits.push({
    id,
    name,
    status,
    reason: reason ?? null,
    answer: status === "ok" ? null : await answer(response),
  });
}
console.log(JSON.stringify({ audits, fetchAccept: await fetchAccept() }));
