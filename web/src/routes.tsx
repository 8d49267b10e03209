// One chunk per route, loaded lazily. A route already loaded renders at once (no Suspense
// fallback), which is how the first render replaces the server's HTML without a flash:
// main.tsx waits for the current route before rendering.
import { lazy, type ComponentType } from "react";
import { loaders, routeOf, type RouteName } from "./routeOf";

type Module = { default: ComponentType };

function route(name: RouteName) {
  let loaded: Module | null = null;
  const preload = () => loaders[name]().then((m) => (loaded = m));
  const Lazy = lazy(preload);
  function Route() {
    const Loaded = loaded?.default;
    return Loaded ? <Loaded /> : <Lazy />;
  }
  return { preload, Route };
}

export const routes = {
  home: route("home"),
  catalog: route("catalog"),
  entity: route("entity"),
  team: route("team"),
  workload: route("workload"),
  missing: route("missing"),
};

export { routeOf };
