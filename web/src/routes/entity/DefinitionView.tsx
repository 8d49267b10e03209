/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import { lazy, Suspense, useEffect } from "react";
import { Notice } from "../../components/Section";
import { document } from "../../documents";
import { Para } from "../../kit";
import { DefinitionBoundary, type RendererProps } from "./definitionParts";

// The renderer each type of API gets, each a chunk of its own: they are large (Swagger UI alone
// is several times the rest of the page), so they are fetched only for a definition of their
// type, once its section has come into view. Anything else is highlighted text.
const RENDERERS = {
  openapi: () => import("./OpenApiDefinition"),
  asyncapi: () => import("./AsyncApiDefinition"),
  graphql: () => import("./GraphqlDefinition"),
  text: () => import("./CodeDefinition"),
};

function rendererName(type: string | null | undefined): keyof typeof RENDERERS {
  const lower = (type ?? "").toLowerCase();
  return lower === "openapi" || lower === "asyncapi" || lower === "graphql" ? lower : "text";
}

const VIEWS = {
  openapi: lazy(RENDERERS.openapi),
  asyncapi: lazy(RENDERERS.asyncapi),
  graphql: lazy(RENDERERS.graphql),
  text: lazy(RENDERERS.text),
};

function Status({ text }: { text: string }) {
  return (
    <div className="atrium-definition" role="status">
      <Para tone="subtle">{text}</Para>
    </div>
  );
}

// The definition itself (ApiDefinition.graphql), once its section has come into view: loading,
// unreadable, absent, or shown by the renderer of its type; a renderer that fails leaves it as
// highlighted text, saying why.
export default function DefinitionView({ entityRef, type }: { entityRef: string; type: string | null }) {
  const { data, error } = useQuery<any>(document("ApiDefinition"), { variables: { ref: entityRef } });
  useEffect(() => {
    // The renderer's chunk comes while the definition is asked for, not after it.
    void RENDERERS[rendererName(type)]().catch(() => undefined);
  }, [type]);
  const api = data?.entity;
  if (error && !api) return <Notice tone="error" text={`Could not load the definition: ${error.message}`} />;
  if (!api) return <Status text="Loading the definition…" />;
  if (api.definitionUnavailable) {
    return <Notice tone="error" text={`The definition could not be read: ${api.definitionUnavailable}`} />;
  }
  if (api.definition == null) {
    return <Status text="This API has no definition: it is described by where it is reached (its remotes)." />;
  }
  const props: RendererProps = { text: api.definition, type: api.type ?? type ?? "" };
  const View = VIEWS[rendererName(props.type)];
  return (
    <div className="atrium-definition">
      <DefinitionBoundary {...props}>
        <Suspense fallback={<Status text="Loading the definition's renderer…" />}>
          <View {...props} />
        </Suspense>
      </DefinitionBoundary>
    </div>
  );
}
