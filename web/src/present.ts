// How the console words and links things: the client's half of ssr/present.py, which the
// server's templates use for the same answers (tests/ssr/test_present.py runs both over the
// same cases and compares them).
/* eslint-disable @typescript-eslint/no-explicit-any */
import type { BadgeType, StatusType } from "./kit";

export const KINDS: Record<string, [string, string]> = {
  component: ["Component", "Components"],
  api: ["API", "APIs"],
  resource: ["Resource", "Resources"],
  system: ["System", "Systems"],
  domain: ["Domain", "Domains"],
  group: ["Team", "Teams"],
  user: ["Person", "People"],
  location: ["Location", "Locations"],
};

const LIFECYCLE_TONES: Record<string, BadgeType> = {
  production: "success",
  experimental: "warning",
  deprecated: "error",
};

// A record's own entry: "constructor" or "__proto__" is no kind, tone or level.
function own<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

export function kindLabel(kind: string, plural = false): string {
  const found = own(KINDS, kind.toLowerCase());
  return found ? found[plural ? 1 : 0] : kind;
}

export function splitRef(ref: string): [string, string, string] {
  const colon = ref.indexOf(":");
  const kind = colon < 0 ? ref : ref.slice(0, colon);
  const rest = colon < 0 ? "" : ref.slice(colon + 1);
  const slash = rest.indexOf("/");
  return slash < 0 ? [kind, "default", rest] : [kind, rest.slice(0, slash), rest.slice(slash + 1)];
}

// Python's urllib.parse.quote(part, safe=""): every byte but letters, digits and "_.-~".
export function quote(part: string): string {
  return encodeURIComponent(part).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

// Python's urllib.parse.quote_plus(value, safe=""), as urlencode writes a query's values.
export function quotePlus(value: string): string {
  return quote(value).replace(/%20/g, "+");
}

// Python's urllib.parse.unquote: each run of escapes read as UTF-8 (a byte that cannot be
// read so as U+FFFD), and a "%" that starts no escape kept as it is.
export function unquote(text: string): string {
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) =>
    new TextDecoder().decode(Uint8Array.from(run.slice(1).split("%"), (hex) => parseInt(hex, 16))),
  );
}

export function entityUrl(entity: { ref: string }): string {
  const [kind, namespace, name] = splitRef(entity.ref);
  return `/catalog/${[namespace, kind, name].map(quote).join("/")}`;
}

export function workloadUrl(w: { cluster: string; namespace: string; name: string }): string {
  return `/workloads/${[w.cluster, w.namespace, w.name].map((p) => quote(String(p))).join("/")}`;
}

export function displayName(entity: any): string {
  return String(entity?.profile?.displayName || entity?.title || entity?.name || "");
}

export function picture(entity: any): string | null {
  return entity?.profile?.picture || null;
}

export function lifecycleTone(lifecycle: string): BadgeType {
  return own(LIFECYCLE_TONES, lifecycle) ?? "neutral";
}

export function entityBadges(entity: any): [string, BadgeType][] {
  const badges: [string, BadgeType][] = [[kindLabel(String(entity.kind ?? "")), "neutral"]];
  if (entity.type) badges.push([String(entity.type), "info"]);
  if (entity.lifecycle) badges.push([String(entity.lifecycle), lifecycleTone(String(entity.lifecycle))]);
  return badges;
}

export function crumbsOf(entity: any): [string, string][] {
  const kind = String(entity.kind ?? "").toLowerCase();
  return [
    ["/catalog", "Catalog"],
    [`/catalog?kind=${quote(kind)}`, kindLabel(kind, true)],
  ];
}

export function imageVersion(image: string | null | undefined): string {
  if (!image) return "—";
  const at = image.indexOf("@");
  if (at >= 0) {
    const digest = image.slice(at + 1);
    const colon = digest.indexOf(":");
    return (colon >= 0 ? digest.slice(colon + 1, colon + 13) : "") || digest;
  }
  const last = image.slice(image.lastIndexOf("/") + 1);
  const colon = last.indexOf(":");
  return colon >= 0 ? last.slice(colon + 1) || "latest" : "latest";
}

export function workloadStatus(w: any, unavailable: Record<string, string>): [StatusType, string] {
  const ready = Number(w.readyReplicas || 0);
  const desired = Number(w.desiredReplicas || 0);
  const counted = `${ready}/${desired} ready`;
  if (Object.hasOwn(unavailable, w.cluster)) return ["warning", `${counted}, cluster unavailable`];
  if (desired === 0) return ["canceled", "scaled to 0"];
  if (ready >= desired && Number(w.rolloutProgress ?? 1) >= 1) return ["ok", counted];
  if (ready === 0) return ["problem", counted];
  return ["inProgress", counted];
}

export function clusterErrors(items: any[] | null | undefined): Record<string, string> {
  const found: Record<string, string> = {};
  for (const item of items ?? []) {
    if ("healthy" in item) {
      if (!item.healthy) found[item.name] = item.lastError || "not answering";
    } else {
      found[item.cluster] = item.message || "not answering";
    }
  }
  return found;
}

export function workloadCrumbs(app: any): [string, string][] {
  const crumbs: [string, string][] = [["/catalog", "Catalog"]];
  if (app.entity) crumbs.push([entityUrl(app.entity), displayName(app.entity)]);
  return crumbs;
}

export function scalerBounds(app: any): string {
  const scaler = app.scaler;
  if (scaler && scaler.minReplicas !== null && scaler.minReplicas !== undefined) {
    return `${scaler.minReplicas}–${scaler.maxReplicas ?? "?"} (scaled)`;
  }
  return `${app.replicas ?? "—"} (fixed)`;
}

export function podStatus(pod: any): [StatusType, string] {
  const phase = String(pod.phase || "Unknown");
  if (pod.ready) return ["ok", `${phase}, ready`];
  if (phase === "Pending" || phase === "ContainerCreating") return ["inProgress", phase];
  return ["problem", `${phase}, not ready`];
}

// The catalog searched for the last word of an address that led nowhere.
export function missingSearchHref(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  const word = unquote(trimmed.slice(trimmed.lastIndexOf("/") + 1)).trim();
  return word ? `/catalog?q=${quotePlus(word)}` : "/catalog";
}

export interface Section {
  tab: [string, string];
  client: boolean;
}

export function pageSections(
  route: string,
  kind: string | null,
  panels: [string, string][],
  client: [string, string][],
): Section[] {
  let own: [string, string][];
  const after: [string, string][] = [];
  if (route === "entity") {
    own = [["overview", "Overview"]];
    if (kind === "component") after.push(["workloads", "Workloads & logs"]);
    if (kind === "api") after.push(["definition", "API definition"]);
  } else if (route === "team") {
    own = [
      ["owned", "Owns"],
      ["members", "Members"],
    ];
    after.push(["workloads", "Workloads & logs"]);
  } else if (route === "workload") {
    own = [
      ["overview", "Overview"],
      ["pods", "Pods"],
      ["events", "Events"],
    ];
  } else {
    return [];
  }
  return [
    ...[...own, ...panels, ...after].map((tab) => ({ tab, client: false })),
    ...client.map((tab) => ({ tab, client: true })),
  ];
}

export function homeLead(viewer: any): string {
  const teams: string[] = (viewer.groups ?? []).map(displayName);
  if (!teams.length) return "The directory lists you in no team.";
  const named = teams.slice(0, -1).join(", ") + (teams.length > 1 ? " and " : "") + teams[teams.length - 1];
  return `You are in ${named}.`;
}

// How much a level of attention weighs, and how it shows.
const ATTENTION: Record<string, [number, StatusType]> = {
  CRITICAL: [0, "problem"],
  WARNING: [1, "warning"],
  NOTICE: [2, "queued"],
};

export function attentionStatus(level: string): StatusType {
  return own(ATTENTION, level)?.[1] ?? "unstarted";
}

// What the viewer's teams own, each once (under the first team owning it), with the most
// pressing thing about it: what needs attention first, then by title.
export function homeServices(viewer: any): [any, any, any | null][] {
  const seen = new Map<string, [any, any]>();
  for (const group of viewer.groups ?? []) {
    for (const entity of group.owns ?? []) if (!seen.has(entity.ref)) seen.set(entity.ref, [entity, group]);
  }
  const worst = new Map<string, any>();
  for (const item of viewer.attention ?? []) {
    const ref = item.entity?.ref;
    if (ref && !worst.has(ref)) worst.set(ref, item);
  }
  const weight = ([entity]: [any, any]): [number, string] => {
    const item = worst.get(entity.ref);
    return [item ? (own(ATTENTION, item.level)?.[0] ?? 3) : 3, displayName(entity).toLowerCase()];
  };
  // Python's sort: by weight, then the lowercased title in code point order (not UTF-16's,
  // which puts "😀" before "ｆ"); stable.
  return [...seen.values()]
    .sort((a, b) => {
      const [x, y] = [weight(a), weight(b)];
      return x[0] - y[0] || byCodePoint(x[1], y[1]);
    })
    .map(([entity, group]) => [entity, group, worst.get(entity.ref) ?? null]);
}

function byCodePoint(a: string, b: string): number {
  const [x, y] = [[...a], [...b]];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i].codePointAt(0)! - y[i].codePointAt(0)!;
  }
  return x.length - y.length;
}

// Backstage's rule for names and namespaces (ssr/present.py's address_problem says the same).
const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

// Why an entity's address cannot name one: a 400 (no entity can be named so) or a 404 (no such
// kind); null when it could.
export function addressProblem(namespace: string, kind: string, name: string): { status: 400 | 404; reason: string } | null {
  if (!(NAME.test(namespace.toLowerCase()) && NAME.test(name.toLowerCase()) && name.length <= 63)) {
    return { status: 400, reason: "No entity can be named so." };
  }
  if (!Object.hasOwn(KINDS, kind.toLowerCase())) return { status: 404, reason: `The catalog has no kind “${kind}”.` };
  return null;
}
