// graphql-http's server audit (the GraphQL-over-HTTP conformance suite) against a URL.
// Usage: node audit.mjs URL
// Prints one JSON list: every audit with its id, name, status (ok, warn, notice, error) and
// reason.
import { auditServer } from "graphql-http";

const results = await auditServer({ url: process.argv[2] });
console.log(
  JSON.stringify(
    results.map(({ id, name, status, reason }) => ({ id, name, status, reason: reason ?? null })),
  ),
);
