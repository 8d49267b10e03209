// The console's critical CSS, worked out at build time: the rules of Gestalt's stylesheet whose
// classes the kit's markup uses, the frame's own rules, and the design tokens all of those read
// (transitively), light by default and dark under `prefers-color-scheme: dark` or
// `data-color-scheme="dark"` on <html> (the toggle). The server inlines it in every page, so the
// first paint needs no stylesheet; the rest of Gestalt's (overlays, what React alone renders)
// loads after the first render.
import postcss, { type AtRule, type Root } from "postcss";

interface Inputs {
  markup: string[]; // the kit's templates
  gestalt: string; // gestalt/dist/gestalt.css
  light: string; // the classic theme's tokens
  dark: string;
  frame: string; // the console's own CSS (styles/frame.css)
}

const VAR = /var\(\s*(--[A-Za-z0-9_-]+)/g;
const CLASS = /\.(-?[A-Za-z_][A-Za-z0-9_-]*)/g;

export function usedClasses(markup: string[]): Set<string> {
  const used = new Set<string>();
  for (const html of markup) {
    for (const match of html.matchAll(/class="([^"]*)"/g)) {
      for (const name of match[1].split(/\s+/)) if (name) used.add(name);
    }
  }
  return used;
}

// Custom properties declared on :root, by name.
export function rootVariables(css: string): Map<string, string> {
  const found = new Map<string, string>();
  postcss.parse(css).walkRules((rule) => {
    if (rule.selector !== ":root") return;
    rule.walkDecls((decl) => {
      if (decl.prop.startsWith("--")) found.set(decl.prop, decl.value);
    });
  });
  return found;
}

// Gestalt's rules that apply to the kit's markup: every class a selector names is used.
function gestaltSubset(gestalt: string, used: Set<string>): Root {
  const root = postcss.parse(gestalt);
  const animations = new Set<string>();
  root.walkRules((rule) => {
    const parent = rule.parent as AtRule | undefined;
    if (parent?.type === "atrule" && /keyframes$/.test(parent.name)) return;
    if (rule.selector === ":root") {
      rule.remove(); // tokens come separately, pruned
      return;
    }
    const kept = rule.selectors.filter((selector) => {
      const classes = [...selector.matchAll(CLASS)].map((m) => m[1]);
      return classes.every((c) => used.has(c));
    });
    if (kept.length === 0) {
      rule.remove();
      return;
    }
    rule.selectors = kept;
    rule.walkDecls(/^animation(-name)?$/, (decl) => {
      for (const word of decl.value.split(/[\s,]+/)) animations.add(word);
    });
  });
  root.walkAtRules((at) => {
    if (/keyframes$/.test(at.name) && !animations.has(at.params)) at.remove();
  });
  root.walkAtRules((at) => {
    if (at.nodes && at.nodes.length === 0) at.remove();
  });
  return root;
}

// The variables `css` reads, and those they read in turn.
function reachable(sources: string[], tables: Map<string, string>[]): string[] {
  const seen = new Set<string>();
  const queue = sources.flatMap((css) => [...css.matchAll(VAR)].map((m) => m[1]));
  while (queue.length) {
    const name = queue.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    for (const table of tables) {
      const value = table.get(name);
      if (value) for (const m of value.matchAll(VAR)) queue.push(m[1]);
    }
  }
  return [...seen].sort();
}

function block(selector: string, entries: [string, string][]): string {
  return `${selector}{${entries.map(([k, v]) => `${k}:${v}`).join(";")}}`;
}

export function criticalCss(inputs: Inputs): string {
  const used = usedClasses(inputs.markup);
  const subset = gestaltSubset(inputs.gestalt, used).toString();
  const frame = postcss.parse(inputs.frame).toString();
  const light = new Map([...rootVariables(inputs.light), ...rootVariables(inputs.gestalt)]);
  const dark = rootVariables(inputs.dark);
  const names = reachable([subset, frame, ...inputs.markup], [light, dark]);
  const lights = names.filter((n) => light.has(n)).map((n): [string, string] => [n, light.get(n)!]);
  const darks = names
    .filter((n) => dark.has(n) && dark.get(n) !== light.get(n))
    .map((n): [string, string] => [n, dark.get(n)!]);
  const darkBlock = (selector: string) => block(selector, [["color-scheme", "dark"], ...darks]);
  const tokens = [
    block(":root", [["color-scheme", "light"], ...lights]),
    darkBlock(':root[data-color-scheme="dark"]'),
    `@media (prefers-color-scheme: dark){${darkBlock(':root:not([data-color-scheme="light"])')}}`,
  ].join("\n");
  return minify(`${tokens}\n${subset}\n${frame}`);
}

// Whitespace and comments out; nothing else changes.
function minify(css: string): string {
  const root = postcss.parse(css);
  root.walkComments((c) => {
    c.remove();
  });
  root.walk((node) => {
    node.raws.before = "";
    node.raws.after = "";
    if (node.type === "decl") node.raws.between = ":";
    if (node.type === "rule" || node.type === "atrule") node.raws.between = "";
    if (node.type === "rule" || node.type === "atrule") node.raws.semicolon = false;
  });
  return root.toString();
}
