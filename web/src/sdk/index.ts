// The console's SDK: what a plugin's console module (builder.console) is built against, as
// "@atrium/console" (the page's import map points that name, "react" and "react/jsx-runtime" at
// the console's own modules, so a module shares its React, Apollo client and components).
// A module exports `panels` (PluginPanel[]) and `operations` (its .graphql files' text, by
// name); its panels render with the kit below, so the server's template and React's first
// render are the same markup and React hydrates the server's HTML in place.
export { ActionOutcome, ActionStatus, ConfirmAction, type Outcome } from "../components/Confirm";
export { Card, Empty, Loading, Notice, Section } from "../components/Section";
export { EntityLink, EntityList, Person } from "../components/EntityLink";
export { document, registerDocuments } from "../documents";
export * from "../kit";
export { page } from "../page";
export type { PanelProps, PluginPanel } from "../plugins";
export { entityUrl, kindLabel, splitRef } from "../present";
export { useMutationOf, useOperation, useSubscriptionOf } from "./operations";

// The version of the SDK's surface: a module may check it (the console logs a mismatch).
export const SDK_VERSION = 1;
