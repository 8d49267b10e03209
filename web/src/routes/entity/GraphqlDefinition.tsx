import {
  Kind,
  parse,
  print,
  type ConstDirectiveNode,
  type DefinitionNode,
  type FieldDefinitionNode,
  type InputValueDefinitionNode,
  type StringValueNode,
  type TypeNode,
} from "graphql";
import { Fragment, useMemo, type ReactNode } from "react";
import { Badge, CardTitle, Para, Small } from "../../kit";
import { AsText, type RendererProps } from "./definitionParts";
import "./GraphqlDefinition.css";

// A GraphQL schema (SDL) read with graphql-js's own parser, the one the console already ships,
// as its types with their fields, arguments, values and descriptions, each type a card that the
// others' fields link to. (GraphiQL's doc explorer needs GraphiQL's whole provider, Monaco with
// it, which adds <style> elements the pages' Content-Security-Policy refuses.)

const ROOTS = ["Query", "Mutation", "Subscription"];

type Described = { description?: StringValueNode; directives?: readonly ConstDirectiveNode[] };

interface Entry {
  keyword: string;
  name: string;
  node: DefinitionNode;
}

function entryOf(node: DefinitionNode): Entry | null {
  switch (node.kind) {
    case Kind.OBJECT_TYPE_DEFINITION:
      return { keyword: "type", name: node.name.value, node };
    case Kind.INTERFACE_TYPE_DEFINITION:
      return { keyword: "interface", name: node.name.value, node };
    case Kind.INPUT_OBJECT_TYPE_DEFINITION:
      return { keyword: "input", name: node.name.value, node };
    case Kind.ENUM_TYPE_DEFINITION:
      return { keyword: "enum", name: node.name.value, node };
    case Kind.UNION_TYPE_DEFINITION:
      return { keyword: "union", name: node.name.value, node };
    case Kind.SCALAR_TYPE_DEFINITION:
      return { keyword: "scalar", name: node.name.value, node };
    case Kind.OBJECT_TYPE_EXTENSION:
      return { keyword: "extend type", name: node.name.value, node };
    case Kind.INTERFACE_TYPE_EXTENSION:
      return { keyword: "extend interface", name: node.name.value, node };
    case Kind.INPUT_OBJECT_TYPE_EXTENSION:
      return { keyword: "extend input", name: node.name.value, node };
    case Kind.ENUM_TYPE_EXTENSION:
      return { keyword: "extend enum", name: node.name.value, node };
    case Kind.UNION_TYPE_EXTENSION:
      return { keyword: "extend union", name: node.name.value, node };
    case Kind.DIRECTIVE_DEFINITION:
      return { keyword: "directive", name: `@${node.name.value}`, node };
    case Kind.SCHEMA_DEFINITION:
    case Kind.SCHEMA_EXTENSION:
      return { keyword: node.kind === Kind.SCHEMA_DEFINITION ? "schema" : "extend schema", name: "", node };
    default:
      return null; // operations and fragments describe no type
  }
}

const anchor = (name: string) => `definition-type-${name}`;

function Ref({ type, known }: { type: TypeNode; known: Set<string> }): ReactNode {
  if (type.kind === Kind.NON_NULL_TYPE)
    return (
      <>
        <Ref type={type.type} known={known} />!
      </>
    );
  if (type.kind === Kind.LIST_TYPE)
    return (
      <>
        [<Ref type={type.type} known={known} />]
      </>
    );
  const name = type.name.value;
  return known.has(name) ? <a href={`#${anchor(name)}`}>{name}</a> : <span>{name}</span>;
}

function deprecation(node: Described): string | null {
  const found = node.directives?.find((d) => d.name.value === "deprecated");
  if (!found) return null;
  const reason = found.arguments?.find((a) => a.name.value === "reason")?.value;
  return reason?.kind === Kind.STRING ? reason.value : "";
}

// Directives other than @deprecated (which shows as a badge), as written: @key(fields: "id").
function Directives({ node }: { node: Described }) {
  const shown = (node.directives ?? []).filter((d) => d.name.value !== "deprecated");
  return shown.length ? <span className="atrium-gql-directives"> {shown.map((d) => print(d)).join(" ")}</span> : null;
}

function About({ node }: { node: Described }) {
  const deprecated = deprecation(node);
  return (
    <>
      {node.description?.value ? <Small>{node.description.value}</Small> : null}
      {deprecated !== null ? (
        <span className="atrium-gql-deprecated">
          <Badge text="deprecated" type="warning" /> {deprecated ? <Small>{deprecated}</Small> : null}
        </span>
      ) : null}
    </>
  );
}

function Args({ args, known }: { args?: readonly InputValueDefinitionNode[]; known: Set<string> }) {
  if (!args?.length) return null;
  return (
    <>
      (
      {args.map((arg, i) => (
        <Fragment key={arg.name.value}>
          {i ? ", " : ""}
          <span className="atrium-gql-arg">{arg.name.value}</span>: <Ref type={arg.type} known={known} />
          {arg.defaultValue ? ` = ${print(arg.defaultValue)}` : ""}
        </Fragment>
      ))}
      )
    </>
  );
}

function Field({ field, known }: { field: FieldDefinitionNode | InputValueDefinitionNode; known: Set<string> }) {
  const args = field.kind === Kind.FIELD_DEFINITION ? field.arguments : undefined;
  const described = (args ?? []).filter((a) => a.description?.value || deprecation(a) !== null);
  return (
    <li>
      <code className="atrium-gql-signature">
        <span className="atrium-gql-field">{field.name.value}</span>
        <Args args={args} known={known} />: <Ref type={field.type} known={known} />
        {field.kind === Kind.INPUT_VALUE_DEFINITION && field.defaultValue ? ` = ${print(field.defaultValue)}` : ""}
        <Directives node={field} />
      </code>
      <About node={field} />
      {described.length ? (
        <ul className="atrium-gql-args">
          {described.map((arg) => (
            <li key={arg.name.value}>
              <code className="atrium-gql-arg">{arg.name.value}</code> <About node={arg} />
            </li>
          ))}
        </ul>
      ) : null}
    </li>
  );
}

function Members({ node, known }: { node: DefinitionNode; known: Set<string> }) {
  switch (node.kind) {
    case Kind.OBJECT_TYPE_DEFINITION:
    case Kind.OBJECT_TYPE_EXTENSION:
    case Kind.INTERFACE_TYPE_DEFINITION:
    case Kind.INTERFACE_TYPE_EXTENSION:
    case Kind.INPUT_OBJECT_TYPE_DEFINITION:
    case Kind.INPUT_OBJECT_TYPE_EXTENSION:
      return node.fields?.length ? (
        <ul className="atrium-gql-fields">
          {node.fields.map((field) => (
            <Field key={field.name.value} field={field} known={known} />
          ))}
        </ul>
      ) : null;
    case Kind.ENUM_TYPE_DEFINITION:
    case Kind.ENUM_TYPE_EXTENSION:
      return node.values?.length ? (
        <ul className="atrium-gql-fields">
          {node.values.map((value) => (
            <li key={value.name.value}>
              <code className="atrium-gql-signature">
                <span className="atrium-gql-field">{value.name.value}</span>
                <Directives node={value} />
              </code>
              <About node={value} />
            </li>
          ))}
        </ul>
      ) : null;
    case Kind.UNION_TYPE_DEFINITION:
    case Kind.UNION_TYPE_EXTENSION:
      return node.types?.length ? (
        <code className="atrium-gql-signature">
          ={" "}
          {node.types.map((t, i) => (
            <Fragment key={t.name.value}>
              {i ? " | " : ""}
              <Ref type={t} known={known} />
            </Fragment>
          ))}
        </code>
      ) : null;
    case Kind.DIRECTIVE_DEFINITION:
      return (
        <code className="atrium-gql-signature">
          <Args args={node.arguments} known={known} />
          {node.repeatable ? " repeatable" : ""} on {node.locations.map((l) => l.value).join(" | ")}
        </code>
      );
    case Kind.SCHEMA_DEFINITION:
    case Kind.SCHEMA_EXTENSION:
      return (
        <ul className="atrium-gql-fields">
          {(node.operationTypes ?? []).map((op) => (
            <li key={op.operation}>
              <code className="atrium-gql-signature">
                {op.operation}: <Ref type={op.type} known={known} />
              </code>
            </li>
          ))}
        </ul>
      );
    default:
      return null;
  }
}

function Interfaces({ node, known }: { node: DefinitionNode; known: Set<string> }) {
  if (!("interfaces" in node) || !node.interfaces?.length) return null;
  return (
    <Small>
      implements{" "}
      {node.interfaces.map((t, i) => (
        <Fragment key={t.name.value}>
          {i ? " & " : ""}
          <Ref type={t} known={known} />
        </Fragment>
      ))}
    </Small>
  );
}

function read(text: string): { entries: Entry[]; description: string | null } | { error: string } {
  let document;
  try {
    document = parse(text, { noLocation: true });
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
  const entries = document.definitions.map(entryOf).filter((e): e is Entry => e !== null);
  if (!entries.length) return { error: "it defines no type" };
  const rank = (e: Entry) => {
    const root = ROOTS.indexOf(e.name);
    return e.keyword === "schema" ? -1 : root >= 0 ? root : e.keyword === "directive" ? 9 : 3;
  };
  const schema = entries.find((e) => e.keyword === "schema")?.node as Described | undefined;
  return {
    entries: entries.map((e, i) => [e, i] as const).sort((a, b) => rank(a[0]) - rank(b[0]) || a[1] - b[1]).map(([e]) => e),
    description: schema?.description?.value ?? null,
  };
}

export default function GraphqlDefinition({ text, type }: RendererProps) {
  const result = useMemo(() => read(text), [text]);
  if ("error" in result) return <AsText text={text} type={type} reason={result.error} />;
  const { entries, description } = result;
  const known = new Set(entries.filter((e) => !e.keyword.startsWith("extend") && e.keyword !== "directive").map((e) => e.name));
  const named = entries.filter((e) => known.has(e.name) && !e.keyword.startsWith("extend"));
  const seen = new Set<string>();
  return (
    <div className="atrium-gql">
      {description ? <Para>{description}</Para> : null}
      <nav className="atrium-gql-index" aria-label="The schema's types">
        {named.map((e, i) => (
          <Fragment key={e.name}>
            {i ? " · " : ""}
            <a href={`#${anchor(e.name)}`}>{e.name}</a>
          </Fragment>
        ))}
      </nav>
      {entries.map((entry, i) => {
        const id = entry.name && !seen.has(entry.name) ? anchor(entry.name) : undefined;
        if (entry.name) seen.add(entry.name);
        return (
          <article className="atrium-card atrium-gql-type" id={id} key={`${entry.keyword} ${entry.name} ${i}`}>
            <CardTitle>
              <span className="atrium-gql-keyword">{entry.keyword}</span> {entry.name}
              <Directives node={entry.node as Described} />
            </CardTitle>
            <Interfaces node={entry.node} known={known} />
            <About node={entry.node as Described} />
            <Members node={entry.node} known={known} />
          </article>
        );
      })}
    </div>
  );
}
