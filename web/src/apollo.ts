import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { GraphQLWsLink } from "@apollo/client/link/subscriptions";
import { getMainDefinition } from "@apollo/client/utilities";
import { generatePersistedQueryIdsFromManifest } from "@apollo/persisted-query-lists";
import { createClient } from "graphql-ws";
import { pluginTypePolicies } from "./pluginPolicies";
import { reconnect } from "./reconnect.mjs";

// The schema's interfaces and what implements them, for fragments on Entity and Node.
const ENTITY_KINDS = ["Component", "API", "Resource", "System", "Domain", "Group", "User", "Location"];

export function cache(): InMemoryCache {
  return new InMemoryCache({
    possibleTypes: { Entity: ENTITY_KINDS, Node: ENTITY_KINDS },
    typePolicies: {
      // Entities, PinApps and PinScalers are keyed by their `id` (the default); these are not.
      Viewer: { keyFields: [] },
      ClusterStatus: { keyFields: ["name"] },
      Pod: { keyFields: false },
      // A person's or team's profile belongs to them: answers asking for different parts of it
      // (a deploy's actor, a team's members) add up instead of replacing one another.
      Profile: { keyFields: false, merge: true },
      KubeEvent: { keyFields: false },
      Query: {
        fields: {
          // One entry per argument set: each catalog page is its own answer.
          entities: { keyArgs: ["filter", "search", "orderBy", "first", "after"] },
        },
      },
      ...pluginTypePolicies,
    },
  });
}

// Ids of the console's operations, as the build's manifest says (the server trusts these).
let manifest: Promise<{ operations: { id: string; name: string }[] }> | null = null;
function loadManifest() {
  manifest ??= fetch("/assets/persisted-query-manifest.json").then((r) => {
    if (!r.ok) throw new Error(`the persisted-query manifest: HTTP ${r.status}`);
    return r.json();
  });
  return manifest;
}

export function client(): ApolloClient {
  const http = new HttpLink({ uri: "/graphql" });
  const persisted = new PersistedQueryLink({
    ...generatePersistedQueryIdsFromManifest({ loadManifest }),
    useGETForHashedQueries: true,
  });
  const ws = new GraphQLWsLink(
    createClient({
      url: `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/graphql`,
      lazy: true,
      ...reconnect,
    }),
  );
  const link = ApolloLink.split(
    ({ query }) => {
      const main = getMainDefinition(query);
      return main.kind === "OperationDefinition" && main.operation === "subscription";
    },
    persisted.concat(ws),
    persisted.concat(http),
  );
  return new ApolloClient({ cache: cache(), link });
}
