// Which route a path is, as the router will decide, without loading the router: the entry uses
// it to load the current route's chunk alongside the app.
export type RouteName = "home" | "catalog" | "entity" | "team" | "workload" | "missing";

export const loaders: Record<RouteName, () => Promise<{ default: React.ComponentType }>> = {
  home: () => import("./routes/Home"),
  catalog: () => import("./routes/Catalog"),
  entity: () => import("./routes/Entity"),
  team: () => import("./routes/Team"),
  workload: () => import("./routes/Workload"),
  missing: () => import("./routes/Missing"),
};

export function routeOf(path: string): RouteName {
  if (path === "/") return "home";
  if (path === "/catalog" || path === "/catalog/") return "catalog";
  const entity = path.match(/^\/catalog\/[^/]+\/([^/]+)\/[^/]+\/?$/);
  if (entity) return safeDecode(entity[1]).toLowerCase() === "group" ? "team" : "entity";
  if (/^\/teams\/[^/]+\/?$/.test(path)) return "team";
  if (/^\/workloads\/[^/]+\/[^/]+\/[^/]+\/?$/.test(path)) return "workload";
  return "missing";
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

const started = new Map<RouteName, Promise<unknown>>();
export function preload(route: RouteName) {
  if (!started.has(route)) started.set(route, loaders[route]().catch(() => undefined));
  return started.get(route)!;
}

export function preloadCurrentRoute() {
  return preload(routeOf(location.pathname));
}
