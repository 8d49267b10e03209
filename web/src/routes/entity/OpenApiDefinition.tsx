import { load } from "js-yaml";
import { useEffect, useMemo, useSyncExternalStore } from "react";
import SwaggerUI from "swagger-ui-react";
import "swagger-ui-react/swagger-ui.css";
import { AsText, type RendererProps } from "./definitionParts";
import "./OpenApiDefinition.css";

// An OpenAPI (or Swagger 2) definition in Swagger UI, as Backstage shows it: read only, since
// the page may reach nothing but its own server (no "Try it out", no request of any kind: a
// definition's external $ref stays unresolved rather than fetched).

function read(text: string): { spec: Record<string, unknown> } | { error: string } {
  let spec: unknown;
  try {
    spec = load(text);
  } catch (error) {
    return { error: error instanceof Error ? error.message.split("\n")[0] : String(error) };
  }
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) return { error: "it is not a YAML or JSON object" };
  const version = (spec as Record<string, unknown>).openapi ?? (spec as Record<string, unknown>).swagger;
  if (typeof version !== "string") return { error: "it names no openapi (or swagger) version" };
  return { spec: spec as Record<string, unknown> };
}

function refuse(request: { [key: string]: unknown }): never {
  throw new Error(`the console fetches nothing for a definition (${String(request.url)})`);
}

// Whether the page is dark: the header's choice (data-color-scheme on <html>), else the system's,
// as the page's own stylesheet decides (read here rather than through theme.ts, which would
// become a chunk of its own on every page's path for this chunk's sake).
const DARK = "(prefers-color-scheme: dark)";

function pageIsDark(): boolean {
  const chosen = document.documentElement.getAttribute("data-color-scheme");
  return chosen ? chosen === "dark" : window.matchMedia(DARK).matches;
}

function watchScheme(changed: () => void) {
  const attribute = new MutationObserver(changed);
  attribute.observe(document.documentElement, { attributeFilter: ["data-color-scheme"] });
  const media = window.matchMedia(DARK);
  media.addEventListener("change", changed);
  return () => {
    attribute.disconnect();
    media.removeEventListener("change", changed);
  };
}

// Swagger UI's dark theme is its stylesheet's `html.dark-mode`: set while it shows, as the page is.
function useSwaggerDarkMode() {
  const dark = useSyncExternalStore(watchScheme, pageIsDark);
  useEffect(() => {
    const root = document.documentElement;
    root.classList.toggle("dark-mode", dark);
    return () => root.classList.remove("dark-mode");
  }, [dark]);
}

export default function OpenApiDefinition({ text, type }: RendererProps) {
  const result = useMemo(() => read(text), [text]);
  useSwaggerDarkMode();
  if ("error" in result) return <AsText text={text} type={type} reason={result.error} />;
  return (
    <div className="atrium-openapi">
      <SwaggerUI
        spec={result.spec}
        supportedSubmitMethods={[]}
        tryItOutEnabled={false}
        requestInterceptor={refuse}
        docExpansion="list"
        defaultModelsExpandDepth={0}
        deepLinking={false}
        queryConfigEnabled={false}
      />
    </div>
  );
}
