// Backstage's own catalog client (@backstage/catalog-client) against a running Atrium: every
// read method of its CatalogApi, pointed by discovery at ATRIUM_URL/api/catalog, with an API
// token. Next to what Atrium answers, each filter's matches as Backstage's catalog computes
// them: its stitcher's search rows (buildEntitySearch's traverse, shipped in the client's
// package) over the entities Atrium serves, and its backend's filter rules.
// Usage: node catalog_client.mjs ATRIUM_URL TOKEN LOCATION_FILE
// Prints one JSON object: each step's result, or the error it threw ({error, name, status,
// body}).
import { CatalogClient, CATALOG_FILTER_EXISTS } from "@backstage/catalog-client";
import { stringifyEntityRef } from "@backstage/catalog-model";

import { traverse } from "./node_modules/@backstage/catalog-client/dist/plugins/catalog-backend/src/database/operations/stitcher/buildEntitySearch.esm.js";

const [base, token, locationFile] = process.argv.slice(2);
const discoveryApi = { getBaseUrl: async () => `${base}/api/catalog` };
const client = new CatalogClient({ discoveryApi });
const options = { token };
const out = {};

async function step(name, run) {
  try {
    out[name] = await run();
  } catch (error) {
    out[name] = {
      error: String(error),
      name: error.name,
      status: error.response?.status,
      body: error.body,
    };
  }
}

const refs = (entities) => entities.map((e) => (e ? stringifyEntityRef(e) : null));

// Backstage's search rows of one entity (buildEntitySearch and mapToRows), lowercased.
function searchRows(entity) {
  const raw = traverse(entity);
  raw.push({ key: "metadata.name", value: entity.metadata.name });
  raw.push({ key: "metadata.namespace", value: entity.metadata.namespace });
  raw.push({ key: "metadata.uid", value: entity.metadata.uid });
  if (!entity.metadata.namespace) raw.push({ key: "metadata.namespace", value: "default" });
  for (const relation of entity.relations ?? []) {
    raw.push({ key: `relations.${relation.type}`, value: relation.targetRef });
  }
  const rows = [];
  for (const { key: rawKey, value: rawValue } of raw) {
    const key = rawKey.toLocaleLowerCase("en-US");
    if (key.length > 200) continue;
    const text = rawValue === undefined || rawValue === null ? null : String(rawValue);
    const value = text === null ? null : text.toLocaleLowerCase("en-US");
    rows.push({ key, value: value !== null && value.length <= 200 ? value : null });
  }
  return rows;
}

// Backstage's backend: filter sets or'ed, keys and'ed, a key's values or'ed, EXISTS wins.
function matches(rows, filter) {
  return [filter].flat().some((set) =>
    Object.entries(set).every(([key, value]) => {
      const k = key.toLocaleLowerCase("en-US");
      const values = [value].flat();
      if (values.includes(CATALOG_FILTER_EXISTS)) return rows.some((r) => r.key === k);
      const wanted = values.map((v) => v.toLocaleLowerCase("en-US"));
      return rows.some((r) => r.key === k && r.value !== null && wanted.includes(r.value));
    }),
  );
}

const EXISTS = CATALOG_FILTER_EXISTS;
const PARITY = {
  "component in production": { kind: "Component", "spec.lifecycle": "production" },
  "owner as written": { "spec.owner": "checkout-team" },
  "a tag": { "metadata.tags": "java" },
  "a tag's key": { "metadata.tags.java": EXISTS },
  "a label": { "metadata.labels.tier": "1" },
  "an annotation exists": { "metadata.annotations.backstage.io/kubernetes-id": EXISTS },
  "an annotation, other case": {
    "metadata.annotations.GitHub.com/project-slug": "Juniper/Checkout",
  },
  "a profile email": { "spec.profile.email": EXISTS },
  "depends on": { "relations.dependsOn": "component:default/auth-service" },
  "member of, lowercase key": { "relations.memberof": "group:default/checkout-team" },
  "two sets": [{ kind: "api", "spec.type": "openapi" }, { kind: "resource" }],
  "values or'ed": { kind: ["API", "System"] },
  "a string in a list": { "spec.members": "amelia.chen" },
  "a string in a list as a key": { "spec.members.amelia.chen": "true" },
  "links": { "metadata.links.title": EXISTS },
  "location targets": { "spec.targets": EXISTS },
  "name in capitals": { "metadata.name": "CHECKOUT" },
  "namespace and kind": { "metadata.namespace": "default", kind: "system" },
  "api version": { apiVersion: "backstage.io/v1alpha1", kind: "domain" },
  "long definitions exist": { kind: "api", "spec.definition": EXISTS },
  "system as written": { "spec.system": "payments" },
  "a description": { kind: "group", "metadata.description": EXISTS },
  "exists and a value": { "metadata.tags": [EXISTS, "go"], kind: "component" },
  "nothing": { kind: "component", "spec.type": "no-such-type" },
};

await step("all", async () => refs((await client.getEntities({}, options)).items));
const everything = (await client.getEntities({}, options)).items;
await step("parity", async () => {
  const rows = everything.map((e) => [stringifyEntityRef(e), searchRows(e)]);
  const result = {};
  for (const [name, filter] of Object.entries(PARITY)) {
    const served = refs((await client.getEntities({ filter }, options)).items);
    const backstage = rows.filter(([, r]) => matches(r, filter)).map(([ref]) => ref);
    result[name] = { served: served.sort(), backstage: backstage.sort() };
  }
  return result;
});
await step("services", async () =>
  refs(
    (await client.getEntities({ filter: { kind: "component", "spec.type": "service" } }, options))
      .items,
  ),
);
await step("fields", async () =>
  (
    await client.getEntities(
      { filter: { kind: "group" }, fields: ["kind", "metadata.name", "spec.profile"] },
      options,
    )
  ).items,
);
await step("ordered", async () =>
  refs(
    (
      await client.getEntities(
        { filter: { kind: "api" }, order: { field: "metadata.name", order: "desc" } },
        options,
      )
    ).items,
  ),
);
await step("offset pages", async () => {
  const pages = [];
  for (let offset = 0; ; offset += 7) {
    const { items } = await client.getEntities(
      { filter: { kind: "component" }, order: { field: "metadata.name", order: "asc" }, limit: 7, offset },
      options,
    );
    if (!items.length) break;
    pages.push(refs(items));
  }
  return pages;
});
await step("query pages", async () => {
  const request = {
    filter: { kind: "component" },
    orderFields: { field: "metadata.name", order: "asc" },
    limit: 7,
  };
  let response = await client.queryEntities(request, options);
  const pages = [{ refs: refs(response.items), totalItems: response.totalItems }];
  while (response.pageInfo.nextCursor) {
    response = await client.queryEntities(
      { cursor: response.pageInfo.nextCursor, limit: 7 },
      options,
    );
    pages.push({ refs: refs(response.items), totalItems: response.totalItems });
  }
  return pages;
});
await step("query by owner, descending", async () => {
  const response = await client.queryEntities(
    { orderFields: { field: "spec.owner", order: "desc" }, limit: 500 },
    options,
  );
  return refs(response.items);
});
await step("full text", async () => {
  const response = await client.queryEntities(
    { fullTextFilter: { term: "checkout" }, limit: 100 },
    options,
  );
  return { refs: refs(response.items), totalItems: response.totalItems };
});
await step("full text in fields", async () => {
  const response = await client.queryEntities(
    { fullTextFilter: { term: "PAY", fields: ["metadata.name", "metadata.title"] }, limit: 100 },
    options,
  );
  return { refs: refs(response.items), totalItems: response.totalItems };
});
await step("stream", async () => {
  const found = [];
  for await (const page of client.streamEntities({ pageSize: 50 }, options)) {
    found.push(refs(page));
  }
  return found;
});
await step("by refs", async () =>
  (
    await client.getEntitiesByRefs(
      {
        entityRefs: ["component:default/checkout", "component:default/no-such-thing", "group:default/checkout-team"],
        fields: ["kind", "metadata.name", "metadata.uid"],
      },
      options,
    )
  ).items,
);
await step("by ref", async () => client.getEntityByRef("component:default/checkout", options));
await step("by ref, missing", async () =>
  (await client.getEntityByRef("component:default/no-such-thing", options)) ?? "undefined",
);
await step("facets", async () =>
  client.getEntityFacets(
    { facets: ["kind", "spec.type", "relations.ownedBy", "metadata.tags"], filter: { kind: "component" } },
    options,
  ),
);
await step("all facets", async () => client.getEntityFacets({ facets: ["kind"] }, options));
await step("ancestors", async () =>
  client.getEntityAncestors({ entityRef: "component:default/checkout" }, options),
);
await step("locations", async () => client.getLocations({}, options));
await step("location by ref", async () => client.getLocationByRef(`file:${locationFile}`, options));
await step("location by entity", async () =>
  client.getLocationByEntity("component:default/checkout", options),
);
await step("location by id", async () => {
  const found = await client.getLocationByEntity("component:default/checkout", options);
  return client.getLocationById(found.id, options);
});
await step("bad filter", async () =>
  client.getEntities({ filter: { "status.items": "x" } }, options),
);
await step("bad token", async () => client.getEntities({}, { token: "atr_nope_nope" }));

console.log(JSON.stringify(out));
