// What plugins add to the console's pages, collected from web/src/plugins/<plugin>/panels.tsx:
// panels on the entity and team pages. The server runs each panel's operation with the page's
// own and embeds its answer (`builder.panel` in graph/plugin.py), so a panel renders at once
// from the cache. A plugin's operations are the .graphql files of its folder; they join the
// persisted-query manifest. Its cache policies are in its index.ts (pluginPolicies.ts).
import type { ComponentType } from "react";

export interface PanelProps {
  // The page's entity ref, the variable the server gave the panel's operation.
  pageRef: string;
}

export interface PluginPanel {
  page: "entity" | "team";
  // Entity kinds (lowercase) it shows on; every kind when left out.
  kinds?: string[];
  component: ComponentType<PanelProps>;
}

const modules = import.meta.glob<PluginPanel[]>("./plugins/*/panels.tsx", {
  import: "panels",
  eager: true,
});
const panels = Object.keys(modules)
  .sort()
  .flatMap((path) => modules[path] ?? []);

export function PluginPanels({
  page,
  kind,
  pageRef,
}: {
  page: PluginPanel["page"];
  kind?: string;
  pageRef: string;
}) {
  const shown = panels.filter(
    (p) => p.page === page && (!p.kinds || !kind || p.kinds.includes(kind)),
  );
  return (
    <>
      {shown.map(({ component: Panel }, index) => (
        <Panel key={index} pageRef={pageRef} />
      ))}
    </>
  );
}
