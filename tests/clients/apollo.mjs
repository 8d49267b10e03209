// Apollo Client 4 as the console configures it, against a running Atrium:
// PersistedQueryLink (sha256 from Node's crypto, GET for hashed queries) chained to HttpLink,
// with Apollo's default headers. fetch is wrapped to record every exchange.
// Usage: node apollo.mjs GRAPHQL_URL ADMIN_TOKEN REF
// Prints one JSON object: the exchanges (method, URL, headers, status, bodies), where each step
// of the scenario starts in them, what each step returned or threw, and the server's
// response-cache counters around the second page load.
import { createHash } from "node:crypto";

import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";

const [url, token, ref] = process.argv.slice(2);
const exchanges = [];

function parsed(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

// The browser's fetch, recorded: what Apollo asked for and what came back.
async function recordingFetch(input, init = {}) {
  const response = await fetch(input, init);
  exchanges.push({
    method: (init.method ?? "GET").toUpperCase(),
    url: String(input),
    requestHeaders: Object.fromEntries(new Headers(init.headers).entries()),
    body: typeof init.body === "string" ? parsed(init.body) : null,
    status: response.status,
    responseHeaders: Object.fromEntries(response.headers.entries()),
    responseBody: parsed(await response.clone().text()),
  });
  return response;
}

// A fresh client: a new page load. `fetchOptions` only for the GET-only paths below.
function client({ headers = {}, persisted = true, fetchOptions } = {}) {
  const http = new HttpLink({ uri: url, fetch: recordingFetch, headers, fetchOptions });
  const link = persisted
    ? new PersistedQueryLink({
        sha256: (text) => createHash("sha256").update(text).digest("hex"),
        useGETForHashedQueries: true,
      }).concat(http)
    : http;
  return new ApolloClient({ link, cache: new InMemoryCache() });
}

const ENTITY = gql`
  query EntityPage($ref: String!) {
    entity(ref: $ref) {
      ref
      name
      ... on Component {
        lifecycle
        owner {
          ref
        }
        dependencies {
          ref
        }
      }
    }
  }
`;

const APPLY = gql`
  mutation Apply($yaml: String!) {
    applyEntities(yaml: $yaml) {
      created
      updated
      unchanged
    }
  }
`;

function component(name) {
  return `apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: ${name}
spec:
  type: service
  lifecycle: experimental
  owner: group:default/platform-infra
`;
}

// The response cache's counters, from /metrics.
async function cacheCounters() {
  const text = await (await fetch(new URL("/metrics", url))).text();
  return text.split("\n").filter((line) => line.startsWith("atrium_cache_lookups{"));
}

function failure(error) {
  return {
    name: error?.name ?? null,
    message: String(error?.message ?? error),
    statusCode: error?.statusCode ?? null,
  };
}

const steps = {};
const results = {};
function mark(name) {
  steps[name] = exchanges.length;
}

try {
  const bearer = { authorization: `Bearer ${token}` };
  // 1. A first page load: a hash-only GET, PersistedQueryNotFound, then the text over POST.
  mark("first");
  results.first = (await client().query({ query: ENTITY, variables: { ref } })).data;
  // 2. A second page load (a fresh client): a GET by hash, answered from the response cache.
  mark("second");
  const before = await cacheCounters();
  results.second = (await client().query({ query: ENTITY, variables: { ref } })).data;
  const after = await cacheCounters();
  results.counters = { before, after };
  // 3. A mutation through the same configuration: POST only (hash, then text), and it runs.
  mark("mutation");
  results.mutation = (
    await client({ headers: bearer }).mutate({
      mutation: APPLY,
      variables: { yaml: component("made-by-apollo") },
    })
  ).data;
  // 4. The same mutation forced over GET: by its hash (now known), then with its text.
  //    Both must be refused without running.
  for (const [step, persisted, name] of [
    ["hashOverGet", true, "refused-hash-over-get"],
    ["textOverGet", false, "refused-text-over-get"],
  ]) {
    mark(step);
    const getOnly = client({ headers: bearer, persisted, fetchOptions: { method: "GET" } });
    try {
      const { data } = await getOnly.mutate({
        mutation: APPLY,
        variables: { yaml: component(name) },
      });
      results[step] = { data };
    } catch (error) {
      results[step] = { error: failure(error) };
    }
  }
  mark("end");
  console.log(JSON.stringify({ exchanges, steps, results }));
} catch (error) {
  mark("end");
  console.log(
    JSON.stringify({ exchanges, steps, results, error: failure(error), stack: error?.stack }),
  );
  process.exitCode = 1;
}
