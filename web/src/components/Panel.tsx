import type { ErrorLike } from "@apollo/client";
import type { ReactNode } from "react";

interface Props {
  id: string;
  heading: ReactNode;
  error?: ErrorLike | null;
  loading?: boolean;
  children?: ReactNode;
}

// A section of a page, showing its own loading state and its own error: one panel failing
// never takes the page with it.
export function Panel({ id, heading, error, loading, children }: Props) {
  return (
    <section className="atrium-section" aria-labelledby={id}>
      <h2 id={id}>{heading}</h2>
      {error ? (
        <p className="atrium-error" role="alert">
          Could not load this: {error.message}
        </p>
      ) : loading ? (
        <p className="atrium-loading" role="status">
          Loading…
        </p>
      ) : (
        children
      )}
    </section>
  );
}
