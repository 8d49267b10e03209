// Apollo cache policies plugins give their types (web/src/plugins/<plugin>/index.ts exports
// `typePolicies`): small, and part of the entry; their panels load with the pages (plugins.tsx).
import type { TypePolicies } from "@apollo/client";

const modules = import.meta.glob<TypePolicies>("./plugins/*/index.ts", {
  import: "typePolicies",
  eager: true,
});

export const pluginTypePolicies: TypePolicies = Object.assign(
  {},
  ...Object.keys(modules)
    .sort()
    .map((path) => modules[path] ?? {}),
);
