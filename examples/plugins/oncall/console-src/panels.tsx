// The on-call plugin's console module: built against the console's SDK into
// ../atrium_oncall/console/panels.js (vite.config.mjs), which the package ships.
import type { PluginPanel } from "@atrium/console";
import EntityOnCall from "../atrium_oncall/console/EntityOnCall.graphql?raw";
import OverrideOnCall from "../atrium_oncall/console/OverrideOnCall.graphql?raw";
import { OnCallPanel } from "./OnCallPanel";

export const operations = { EntityOnCall, OverrideOnCall };

export const panels: PluginPanel[] = [
  { page: "entity", kinds: ["component"], requires: "EntityOnCall", section: ["oncall", "On call"], component: OnCallPanel },
];
