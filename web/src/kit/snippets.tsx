// Run at build time under Node (vite.kit.config.ts, then `node`): renders every component of
// the kit with placeholders, ⟦name⟧, into the templates the server fills (ssr/kit.py), and writes
// the part of Gestalt's stylesheet those templates use, with the design tokens it needs in light
// and dark, as the page's inline critical CSS.
//
//   node dist-kit/snippets.js OUT_DIR
//
// writes OUT_DIR/kit.json ({name: template}) and OUT_DIR/critical.css.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { renderToStaticMarkup } from "react-dom/server";
import type { ReactElement } from "react";
import {
  AppLink,
  Avatar,
  BADGE_TYPES,
  Badge,
  Button,
  ButtonLink,
  CardTitle,
  Clamp,
  ExternalLink,
  Figure,
  IconButton,
  PageTitle,
  RangeChoice,
  Para,
  Row,
  STATUS_TYPES,
  SectionTabs,
  SectionTitle,
  Select,
  Small,
  SmallIcon,
  Span,
  Status,
  Strong,
  SubmitButton,
  TBody,
  TEXT_TONES,
  THead,
  Table,
  Td,
  Th,
} from "./index";
import { criticalCss } from "./css";
import frame from "../styles/frame.css?raw";

const m = (name: string) => `⟦${name}⟧`;
const render = (element: ReactElement) => renderToStaticMarkup(element);

// Splits a rendering at the first and last occurrence of `marker`'s enclosing item: what comes
// before the first item, one item, what comes after.
function between(html: string, start: string, end: string): [string, string, string] {
  const from = html.indexOf(start);
  const to = html.lastIndexOf(end) + end.length;
  if (from < 0 || to < end.length) throw new Error(`no ${start}...${end} in ${html}`);
  return [html.slice(0, from), html.slice(from, to), html.slice(to)];
}

const snippets: Record<string, string> = {};
const add = (name: string, element: ReactElement) => (snippets[name] = render(element));

add("page-title", <PageTitle>{m("children")}</PageTitle>);
add("section-title", <SectionTitle id={m("id")}>{m("children")}</SectionTitle>);
add("card-title", <CardTitle>{m("children")}</CardTitle>);
for (const tone of TEXT_TONES) {
  add(`para.${tone}`, <Para tone={tone}>{m("children")}</Para>);
  add(`span.${tone}`, <Span tone={tone}>{m("children")}</Span>);
  add(`small.${tone}`, <Small tone={tone}>{m("children")}</Small>);
}
add("strong", <Strong>{m("children")}</Strong>);
add("clamp", <Clamp text={m("text")} />);
add("link", <AppLink href={m("href")}>{m("children")}</AppLink>);
add("link.strong", <AppLink href={m("href")} strong>{m("children")}</AppLink>);
add("external-link", <ExternalLink href={m("href")}>{m("children")}</ExternalLink>);
for (const type of BADGE_TYPES) add(`badge.${type}`, <Badge type={type} text={m("text")} />);
for (const type of STATUS_TYPES) add(`status.${type}`, <Status type={type} title={m("title")} />);
for (const size of ["xs", "sm", "md"] as const) {
  // The initial is the name's first character: the server writes it (⟦initial⟧).
  add(
    `avatar.${size}`,
    <Avatar name={m("name")} size={size} />,
  );
  snippets[`avatar.${size}`] = snippets[`avatar.${size}`].replace(/>⟦<\/text>/, `>${m("initial")}</text>`);
  add(`avatar-image.${size}`, <Avatar name={m("name")} src={m("src")} size={size} />);
}
add("figure", <Figure title={m("title")} value={m("value")} />);
add("button-link", <ButtonLink href={m("href")} text={m("text")} />);
add("button", <Button text={m("text")} />);
add("button.danger", <Button text={m("text")} danger />);
add("button.primary", <Button text={m("text")} primary />);
add("button.submit", <SubmitButton text={m("text")} />);
add("button.submit-gray", <SubmitButton text={m("text")} gray />);
for (const icon of ["star", "star-outline", "contrast"] as const) {
  add(`icon-button.${icon}`, <IconButton icon={icon} label={m("label")} selected={icon === "star"} />);
}
for (const index of [0, 1, 2]) add(`range.${index}`, <RangeChoice selected={index} />);
add("icon.arrow-up", <SmallIcon icon="arrow-up" label={m("label")} />);
add("icon.arrow-down", <SmallIcon icon="arrow-down" label={m("label")} />);

// Tabs: the list, and one tab active or not (the server writes one per section). Gestalt's tab
// list is one element whose children are the tabs.
{
  const tab = { id: m("id"), text: m("text") };
  const split = (html: string): [string, string, string] => {
    const start = html.indexOf('<div class="xuA">');
    if (start < 0 || !html.endsWith("</div>")) throw new Error(`tabs changed shape: ${html}`);
    return [html.slice(0, start), html.slice(start, -"</div>".length), "</div>"];
  };
  const [open, activeTab, close] = split(render(<SectionTabs tabs={[tab]} active={0} />));
  const [, idleTab] = split(render(<SectionTabs tabs={[tab]} active={-1} />));
  const two = render(<SectionTabs tabs={[tab, tab]} active={0} />);
  if (two !== open + activeTab + idleTab + close) throw new Error(`tabs changed shape: ${two}`);
  snippets["tabs"] = open + m("children") + close;
  snippets["tab.active"] = activeTab;
  snippets["tab"] = idleTab;
}
// A select: its frame, and an option chosen or not.
{
  const option = { value: m("value"), label: m("label") };
  const chosen = render(<Select id={m("id")} label={m("label")} value={m("value")} options={[option]} />);
  const [open, chosenOption, close] = between(chosen, "<option", "</option>");
  const idle = render(<Select id={m("id")} label={m("label")} value="" options={[option]} />);
  snippets["select"] = open + m("children") + close;
  snippets["option.selected"] = chosenOption;
  snippets["option"] = between(idle, "<option", "</option>")[1];
}
// A table, from the wrapper to its cells: the first element of each name, its opening tag and
// its closing one.
{
  const html = render(
    <Table label={m("label")}>
      <THead>
        <Row>
          <Th>{m("children")}</Th>
        </Row>
      </THead>
      <TBody>
        <Row>
          <Td>{m("children")}</Td>
        </Row>
      </TBody>
    </Table>,
  );
  const element = (name: string): [number, string, number] => {
    const at = html.search(new RegExp(`<${name}[ >]`));
    const close = html.indexOf(`</${name}>`, at);
    if (at < 0 || close < 0) throw new Error(`no <${name}> in ${html}`);
    return [at, html.slice(at, html.indexOf(">", at) + 1), close + name.length + 3];
  };
  const wrap = (name: string) => {
    const [, open] = element(name);
    return open + m("children") + `</${name}>`;
  };
  const [theadAt] = element("thead");
  const [, , tbodyEnd] = element("tbody");
  snippets["table"] = html.slice(0, theadAt) + m("children") + html.slice(tbodyEnd);
  snippets["thead"] = wrap("thead");
  snippets["tbody"] = wrap("tbody");
  snippets["tr"] = wrap("tr");
  const cell = (name: string) => {
    const [at, , end] = element(name);
    return html.slice(at, end);
  };
  snippets["th"] = cell("th");
  snippets["td"] = cell("td");
}

const out = process.argv[2];
if (!out) throw new Error("usage: node snippets.js OUT_DIR");
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "kit.json"), JSON.stringify(snippets, null, 1));

const require = createRequire(import.meta.url);
const read = (module: string) => readFileSync(require.resolve(module), "utf8");
const css = criticalCss({
  markup: Object.values(snippets),
  gestalt: read("gestalt/dist/gestalt.css"),
  light: read("gestalt-design-tokens/dist/css/classic/variables.css"),
  dark: read("gestalt-design-tokens/dist/css/classic/variables-dark.css"),
  frame,
});
writeFileSync(join(out, "critical.css"), css);
