import hljs from "highlight.js/lib/core";
import graphql from "highlight.js/lib/languages/graphql";
import json from "highlight.js/lib/languages/json";
import protobuf from "highlight.js/lib/languages/protobuf";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { useMemo } from "react";
import { Notice } from "../../components/Section";
import { typeLabel, type RendererProps } from "./definitionParts";
import "./CodeDefinition.css";

// Only the languages definitions come in: highlight.js's core is small, its every language not.
for (const [name, language] of Object.entries({ graphql, json, protobuf, xml, yaml })) {
  hljs.registerLanguage(name, language);
}

const BY_TYPE: Record<string, string> = {
  grpc: "protobuf",
  proto: "protobuf",
  protobuf: "protobuf",
  graphql: "graphql",
  json: "json",
  yaml: "yaml",
  wsdl: "xml",
  xml: "xml",
};

// The language of a definition: its type's, else JSON or YAML by its first character (OpenAPI,
// AsyncAPI, Avro, JSON Schema... come in either), else none.
export function languageOf(type: string, text: string): string | null {
  const known = BY_TYPE[type.toLowerCase()];
  if (known) return known;
  const first = text.trimStart()[0];
  if (first === "{" || first === "[") return "json";
  if (first === "<") return "xml";
  return /^[\w"'-][^\n]*:( |$)/m.test(text) ? "yaml" : null;
}

// A definition as highlighted text (highlight.js), scrolled within its box; with `reason`, says
// first why it is not shown by the renderer of its type.
export default function CodeDefinition({ text, type, reason }: RendererProps) {
  const language = languageOf(type, text);
  // highlight.js escapes the text it is given: its HTML is the text's, with spans for tokens.
  const html = useMemo(
    () => (language ? hljs.highlight(text, { language, ignoreIllegals: true }).value : null),
    [text, language],
  );
  return (
    <>
      {reason ? (
        <Notice tone="error" text={`This definition could not be shown as ${typeLabel(type)} (${reason}); here is its text.`} />
      ) : null}
      <pre
        className="atrium-code atrium-definition-code"
        tabIndex={0}
        role="region"
        aria-label={`The definition's text${language ? ` (${language})` : ""}`}
        data-language={language ?? "text"}
      >
        {html === null ? <code>{text}</code> : <code className="hljs" dangerouslySetInnerHTML={{ __html: html }} />}
      </pre>
    </>
  );
}
