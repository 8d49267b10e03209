// Apollo Client 4 as the console configures it, against a running Atrium:
// PersistedQueryLink with GET for hashed queries, HttpLink, Apollo's default headers.
// Usage: node apollo.mjs URL TOKEN REF
// Prints one JSON object: every HTTP exchange (method, URL, headers, status) and the results.
import { createHash } from "node:crypto";

import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";

const [url, token, ref] = process.argv.slice(2);
const exchanges = [];

// fetch as the browser's, recorded.
async function recordingFetch(input, init = {}) {
  const response = await fetch(input, init);
  exchanges.push({
    method: (init.method ?? "GET").toUpperCase(),
    url: String(input),
    requestHeaders: Object.fromEntries(new Headers(init.headers).entries()),
    body: typeof init.body === "string" ? JSON.parse(init.body) : null,
    status: response.status,
    responseHeaders: Object.fromEntries(response.headers.entries()),
    responseBody: JSON.parse(await response.clone().text()),
  });
  return response;
}

function client(headers = {}) {
  const persisted = new PersistedQueryLink({
    sha256: (text) => createHash("sha256").update(text).digest("hex"),
    useGETForHashedQueries: true,
  });
  return new ApolloClient({
    link: persisted.concat(new HttpLink({ uri: url, fetch: recordingFetch, headers })),
    cache: new InMemoryCache(),
  });
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

const YAML = `apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: made-by-apollo
spec:
  type: service
  lifecycle: experimental
  owner: group:default/platform-infra
`;

const steps = {};
function mark(name) {
  steps[name] = exchanges.length;
}

try {
  // First: Apollo asks by hash over GET, hears PersistedQueryNotFound, sends the text (POST).
  mark("first");
  const first = await client().query({ query: ENTITY, variables: { ref } });
  // A second page load (a fresh client, as a new browser tab): GET by hash, from the cache.
  mark("second");
  const second = await client().query({ query: ENTITY, variables: { ref } });
  // A mutation through the same configuration: POST, never GET.
  mark("mutation");
  const writer = client({ authorization: `Bearer ${token}` });
  const mutation = await writer.mutate({ mutation: APPLY, variables: { yaml: YAML } });
  mark("end");
  console.log(
    JSON.stringify({
      exchanges,
      steps,
      first: first.data,
      second: second.data,
      mutation: mutation.data,
    }),
  );
} catch (error) {
  console.log(JSON.stringify({ exchanges, steps, error: String(error), stack: error.stack }));
  process.exitCode = 1;
}
