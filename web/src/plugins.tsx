// What plugins add to the console's pages, collected from web/src/plugins/<plugin>/panels.tsx:
// panels on the entity and team pages (server-rendered too) and on the workload page (the
// client's only). The server runs each entity or team panel's operation with the page's own
// and embeds its answer (`builder.panel` in graph/plugin.py), so a panel renders at once from
// the cache. A panel that is a section of the page (`section`) gets a tab in the page's
// navigation, as the server's registration of it says too. A plugin's operations are the
// .graphql files of its folder; they join the persisted-query manifest. Its cache policies are
// in its index.ts (pluginPolicies.ts).
//
// Plugins may also ship their panels in a module of their own package (builder.console), which
// the console imports at run time (pluginModules.ts) and renders beside these (pluginHost.tsx).
import type { ComponentType } from "react";
import { page as pageData } from "./page";
import { ModulePanelHost } from "./pluginHost";
import { type ModulePanel, modulePanels, useModulePanels } from "./pluginModules";

export interface PanelProps {
  // The page's entity ref, the variable the server gave the panel's operation; on a workload
  // page, "cluster/namespace/name".
  pageRef: string;
  // On a workload page (rendered by the client only): the PinApp's key.
  workload?: { cluster: string; namespace: string; name: string };
}

export interface PluginPanel {
  page: "entity" | "team" | "workload";
  // Entity kinds (lowercase) it shows on; every kind when left out.
  kinds?: string[];
  // The server's panel operation (builder.panel) this panel needs: it shows only where the
  // server offers it.
  requires?: string;
  // Its section of the page, [id, title], when it is one (its outermost element is then the
  // section, with that id).
  section?: [string, string];
  component: ComponentType<PanelProps>;
}

const modules = import.meta.glob<PluginPanel[]>("./plugins/*/panels.tsx", {
  import: "panels",
  eager: true,
});
const panels = Object.keys(modules)
  .sort()
  .flatMap((path) => modules[path] ?? []);

function shown<P extends PluginPanel>(list: P[], page: PluginPanel["page"], kind?: string): P[] {
  const offered = new Set(pageData.panels ?? []);
  return list.filter(
    (p) => p.page === page && (!p.kinds || !kind || p.kinds.includes(kind)) && (!p.requires || offered.has(p.requires)),
  );
}

export function panelsOf(page: PluginPanel["page"], kind?: string): PluginPanel[] {
  return shown(panels, page, kind);
}

// The page's sections of plugins' panels: the console's own, then the modules' (as the server
// orders them).
export function panelSections(page: PluginPanel["page"], kind?: string): [string, string][] {
  return [...panelsOf(page, kind), ...shown(modulePanels(), page, kind)].flatMap((p) => (p.section ? [p.section] : []));
}

export function PluginPanels({
  page,
  kind,
  pageRef,
  workload,
}: {
  page: PluginPanel["page"];
  kind?: string;
  pageRef: string;
  workload?: PanelProps["workload"];
}) {
  const fromModules: ModulePanel[] = shown(useModulePanels(page), page, kind);
  return (
    <>
      {panelsOf(page, kind).map(({ component: Panel }, index) => (
        <Panel key={index} pageRef={pageRef} workload={workload} />
      ))}
      {fromModules.map((panel, index) => (
        <ModulePanelHost key={`${panel.plugin}:${index}`} panel={panel} pageRef={pageRef} workload={workload} />
      ))}
    </>
  );
}
