import { Component, lazy, Suspense, type ReactNode } from "react";

// What every renderer of a definition is given. `reason`, for the text view only: why the
// definition is shown as text rather than by the renderer of its type.
export interface RendererProps {
  text: string;
  type: string;
  reason?: string;
}

const LABELS: Record<string, string> = { openapi: "OpenAPI", asyncapi: "AsyncAPI", graphql: "a GraphQL schema" };

export function typeLabel(type: string): string {
  return LABELS[type.toLowerCase()] ?? type;
}

export const CodeDefinition = lazy(() => import("./CodeDefinition"));

function message(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.trim().replace(/[.:]$/, "") || "its renderer failed";
}

// What a part of the page shows when something in it throws, as long as its text is the same.
interface FallbackProps {
  text: string;
  fallback: (error: unknown) => ReactNode;
  children: ReactNode;
}

class Fallback extends Component<FallbackProps, { error: unknown }> {
  state = { error: null as unknown };

  static getDerivedStateFromError(error: unknown) {
    return { error };
  }

  componentDidUpdate(previous: { text: string }) {
    if (this.state.error !== null && previous.text !== this.props.text) this.setState({ error: null });
  }

  render() {
    return this.state.error === null ? this.props.children : this.props.fallback(this.state.error);
  }
}

// The definition as highlighted text, saying why the renderer of its type could not show it
// (plain text if even the highlighter's chunk fails to load).
export function AsText({ text, type, reason }: RendererProps) {
  const plain = <pre className="atrium-code atrium-definition-code">{text}</pre>;
  return (
    <Fallback text={text} fallback={() => plain}>
      <Suspense fallback={plain}>
        <CodeDefinition text={text} type={type} reason={reason} />
      </Suspense>
    </Fallback>
  );
}

// A renderer that throws (a definition it cannot make sense of, or its chunk failing to
// load) leaves the definition as text, saying why, rather than an empty section.
export function DefinitionBoundary({ text, type, children }: RendererProps & { children: ReactNode }) {
  return (
    <Fallback text={text} fallback={(error) => <AsText text={text} type={type} reason={message(error)} />}>
      {children}
    </Fallback>
  );
}
