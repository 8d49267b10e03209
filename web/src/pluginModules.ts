// Plugins' console modules (builder.console): the server lists them in the page, each with the
// pages it has panels on; the console imports those of a page before rendering it (the first
// page before React starts, so their panels hydrate the server's HTML), the others when a page
// needs them. A module exports `panels`, `operations` (by name) and, if any, `typePolicies`.
import type { InMemoryCache, TypePolicies } from "@apollo/client";
import { useEffect, useSyncExternalStore } from "react";
import { registerDocuments } from "./documents";
import { page } from "./page";
import type { PluginPanel } from "./plugins";
import { runtime } from "./runtime";

export type ModulePanel = PluginPanel & { plugin: string };

interface Exports {
  panels?: PluginPanel[];
  operations?: Record<string, string>;
  typePolicies?: TypePolicies;
}

const loading = new Map<string, Promise<void>>();
const listeners = new Set<() => void>();
let loaded: ModulePanel[] = [];

function load(plugin: string, url: string): Promise<void> {
  let found = loading.get(url);
  if (!found) {
    found = import(/* @vite-ignore */ url).then(
      (exports: Exports) => {
        registerDocuments(exports.operations ?? {});
        if (exports.typePolicies) (runtime.client?.cache as InMemoryCache | undefined)?.policies.addTypePolicies(exports.typePolicies);
        loaded = [...loaded, ...(exports.panels ?? []).map((panel) => ({ ...panel, plugin }))];
        for (const listener of listeners) listener();
      },
      (error: unknown) => console.error(`plugin ${plugin}'s console module did not load:`, error),
    );
    loading.set(url, found);
  }
  return found;
}

// The modules with panels on this page (entity, team, workload), imported.
export function loadPluginModules(pageName: string): Promise<void> {
  const wanted = (page.plugins ?? []).filter((m) => m.pages.includes(pageName));
  return Promise.all(wanted.map((m) => load(m.plugin, m.module))).then(() => undefined);
}

export function modulePanels(): ModulePanel[] {
  return loaded;
}

function subscribe(listener: () => void) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

// The panels of plugins' modules, once those of this page have loaded.
export function useModulePanels(pageName: string): ModulePanel[] {
  const panels = useSyncExternalStore(subscribe, modulePanels, modulePanels);
  useEffect(() => void loadPluginModules(pageName), [pageName]);
  return panels;
}
