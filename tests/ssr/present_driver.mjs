// The console's half of tests/ssr/test_present.py: bundles web/src/present.ts and
// web/src/catalogUrl.ts with rolldown (the bundler vite builds the console with, from
// web/node_modules), then answers the cases read from stdin, one answer each, on stdout.
//
//   node present_driver.mjs <web directory> <a directory for the bundles>
//
// A case is {module, function, args} or {module, constant}. Two kinds of argument are made
// here: {"$params": "a=1&b=2"} is URLSearchParams, as the console reads location.search, and
// {"$state": "a=1&b=2"} the catalog's state parsed from it. An answer is {value} or {error};
// undefined and functions, which JSON has no words for, are spelled {"$undefined": true} and
// {"$function": name} so they cannot pass for null or go missing.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [web, out] = process.argv.slice(2);
const MODULES = { present: "src/present.ts", catalogUrl: "src/catalogUrl.ts" };

const { rolldown } = await import(pathToFileURL(createRequire(join(web, "package.json")).resolve("rolldown")).href);
const bundle = await rolldown({
  input: Object.fromEntries(Object.entries(MODULES).map(([name, path]) => [name, join(web, path)])),
  logLevel: "warn",
});
await bundle.write({ dir: out, format: "esm", entryFileNames: "[name].mjs" });
await bundle.close();

const modules = {};
for (const name of Object.keys(MODULES)) modules[name] = await import(pathToFileURL(join(out, `${name}.mjs`)).href);

function argument(value) {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    if ("$params" in value) return new URLSearchParams(value.$params);
    if ("$state" in value) return modules.catalogUrl.parse(new URLSearchParams(value.$state));
  }
  return value;
}

function answer(c) {
  try {
    const module = modules[c.module];
    if ("constant" in c) return { value: module[c.constant] };
    return { value: module[c.function](...c.args.map(argument)) };
  } catch (error) {
    return { error: `${error?.name}: ${error?.message}` };
  }
}

function spelled(key, value) {
  if (value === undefined) return { $undefined: true };
  if (typeof value === "function") return { $function: value.name };
  return value;
}

const cases = JSON.parse(readFileSync(0, "utf8"));
const exports = Object.fromEntries(
  Object.entries(modules).map(([name, module]) => [
    name,
    Object.keys(module).filter((key) => typeof module[key] === "function"),
  ]),
);
process.stdout.write(JSON.stringify({ exports, answers: cases.map(answer) }, spelled));
