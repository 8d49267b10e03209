// The catalog page's state as its address says it, and its operations' variables: the client's
// half of ssr/catalog_url.py (tests/ssr/test_present.py compares them). Read that module's
// docstring for the address's parts.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { kindLabel, quotePlus } from "./present";

export const PAGE_SIZE = 25;
export const DEFAULT_KINDS = ["component", "api", "resource", "system", "domain"];
const FILTERS = ["kind", "type", "owner", "lifecycle", "tag", "system"] as const;
export const SORTS: Record<string, string> = {
  name: "TITLE",
  kind: "KIND",
  type: "TYPE",
  owner: "OWNER",
  system: "SYSTEM",
  lifecycle: "LIFECYCLE",
};
export const COLUMNS: [string, string][] = [
  ["name", "Name"],
  ["kind", "Kind"],
  ["owner", "Owner"],
  ["system", "System"],
  ["lifecycle", "Lifecycle"],
];
const ANY: Record<string, string> = {
  kind: "What teams build",
  owner: "Anyone",
  type: "Any",
  lifecycle: "Any",
  tag: "Any",
};
const FACETS: Record<string, string> = {
  kind: "kinds",
  owner: "owners",
  type: "types",
  lifecycle: "lifecycles",
  tag: "tags",
};

export interface CatalogState {
  search: string | null;
  filters: Record<string, string[]>;
  mine: boolean;
  starred: boolean;
  sort: string | null;
  after: string | null;
}

export function kinds(state: CatalogState): string[] {
  return state.filters.kind?.length ? state.filters.kind : DEFAULT_KINDS;
}

export function parse(params: URLSearchParams): CatalogState {
  const values = (key: string) => params.getAll(key).map((v) => v.trim()).filter(Boolean);
  const filters: Record<string, string[]> = {};
  for (const key of FILTERS) {
    let found = values(key);
    if (key === "owner") found = found.filter((v) => v !== "mine");
    if (key === "kind") found = found.map((v) => v.toLowerCase());
    if (found.length) filters[key] = [...new Set(found)];
  }
  const search = values("q").join(" ") || null;
  let sort: string | null = values("sort").at(-1) ?? null;
  if (sort !== null && !Object.hasOwn(SORTS, sort.replace(/^-/, ""))) sort = null;
  return {
    search,
    filters,
    mine: values("owner").includes("mine"),
    starred: ["1", "true", "yes"].includes(values("starred").at(-1) ?? ""),
    sort,
    after: values("after").at(-1) ?? null,
  };
}

// The viewer's teams and stars, from the CatalogViewer operation's answer.
export function viewerRefs(answer: any): [string[], string[]] {
  const viewer = answer?.viewer ?? {};
  const teams = (viewer.groups ?? []).map((g: any) => String(g.ref)).sort();
  const stars = (viewer.starred ?? []).map((e: any) => String(e.ref));
  return [teams, stars];
}

export function orderBy(state: CatalogState): string {
  if (state.sort === null) return state.search ? "RELEVANCE" : "TITLE_ASC";
  const column = SORTS[state.sort.replace(/^-/, "")];
  return state.sort.startsWith("-") ? `${column}_DESC` : `${column}_ASC`;
}

export function entityFilter(state: CatalogState, mine: string[] = [], starred: string[] = []): Record<string, any> {
  const found: Record<string, any> = { ...state.filters, kind: kinds(state) };
  if (state.mine) found.owner = [...new Set([...(found.owner ?? []), ...mine])].sort();
  if (state.starred) found.refs = [...starred];
  return found;
}

export function variables(state: CatalogState, mine: string[] = [], starred: string[] = []) {
  return {
    filter: entityFilter(state, mine, starred),
    search: state.search,
    orderBy: orderBy(state),
    first: PAGE_SIZE,
    after: state.after,
  };
}

export function facetVariables(state: CatalogState, mine: string[] = [], starred: string[] = []) {
  const found = entityFilter(state, mine, starred);
  const kindless = Object.fromEntries(Object.entries(found).filter(([k]) => k !== "kind"));
  return { filter: found, kindless, search: state.search };
}

export function href(state: CatalogState, changes: Partial<CatalogState> = {}): string {
  const merged = { ...state, ...changes };
  const pairs: [string, string][] = [];
  if (merged.search) pairs.push(["q", merged.search]);
  for (const key of FILTERS) for (const value of merged.filters[key] ?? []) pairs.push([key, value]);
  if (merged.mine) pairs.push(["owner", "mine"]);
  if (merged.starred) pairs.push(["starred", "1"]);
  if (merged.sort) pairs.push(["sort", merged.sort]);
  if (merged.after) pairs.push(["after", merged.after]);
  // As Python's urllib.parse.urlencode writes them.
  const query = pairs.map(([k, v]) => `${quotePlus(k)}=${quotePlus(v)}`).join("&");
  return "/catalog" + (query ? `?${query}` : "");
}

export function sortHref(state: CatalogState, key: string): string {
  return href(state, { sort: state.sort === key ? `-${key}` : key, after: null });
}

export function sortedBy(state: CatalogState, key: string): boolean {
  return state.sort !== null && state.sort.replace(/^-/, "") === key;
}

export function choice(state: CatalogState, field: string): string {
  if (field === "owner" && state.mine) return "mine";
  return state.filters[field]?.[0] ?? "";
}

export function options(state: CatalogState, facets: any, field: string, viewer: string | null = null): [string, string][] {
  const found: [string, string][] = [["", ANY[field]]];
  if (field === "owner" && viewer) found.push(["mine", "My teams"]);
  for (const facet of facets?.[FACETS[field]] ?? []) {
    let value = String(facet.value);
    let label: string;
    if (field === "kind") {
      // A kind the console has no word for is shown as the catalog spells it.
      label = kindLabel(value, true);
      value = value.toLowerCase();
    } else if (field === "owner") {
      label = value.slice(value.lastIndexOf("/") + 1);
    } else {
      label = value;
    }
    found.push([value, `${label} (${facet.count})`]);
  }
  const current = choice(state, field);
  if (current && found.every(([value]) => value !== current)) found.push([current, current]);
  return found;
}

export function kindHref(kind: string): string {
  return href({ search: null, filters: { kind: [kind.toLowerCase()] }, mine: false, starred: false, sort: null, after: null });
}

export function ownerHref(ref: string): string {
  return href({
    search: null,
    filters: { owner: [ref], kind: [...DEFAULT_KINDS] },
    mine: false,
    starred: false,
    sort: null,
    after: null,
  });
}
