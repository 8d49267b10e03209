// One chunk per route, loaded lazily. A route already loaded renders at once (no Suspense
// fallback), which is how the first render replaces the server's HTML without a flash:
// main.tsx loads the current route before rendering.
import { lazy, type ComponentType } from "react";

type Module = { default: ComponentType };

function route(load: () => Promise<Module>) {
  let loaded: Module | null = null;
  const preload = () => load().then((m) => (loaded = m));
  const Lazy = lazy(preload);
  function Route() {
    const Loaded = loaded?.default;
    return Loaded ? <Loaded /> : <Lazy />;
  }
  return { preload, Route };
}

export const routes = {
  home: route(() => import("./routes/Home")),
  catalog: route(() => import("./routes/Catalog")),
  entity: route(() => import("./routes/Entity")),
  team: route(() => import("./routes/Team")),
  workload: route(() => import("./routes/Workload")),
};

export type RouteName = keyof typeof routes;

// Which route a path is, as the router will decide.
export function routeOf(path: string): RouteName | null {
  if (path === "/") return "home";
  if (path === "/catalog" || path === "/catalog/") return "catalog";
  const entity = path.match(/^\/catalog\/[^/]+\/([^/]+)\/[^/]+\/?$/);
  if (entity) return decodeURIComponent(entity[1]).toLowerCase() === "group" ? "team" : "entity";
  if (/^\/teams\/[^/]+\/?$/.test(path)) return "team";
  if (/^\/workloads\/[^/]+\/[^/]+\/[^/]+\/?$/.test(path)) return "workload";
  return null;
}
