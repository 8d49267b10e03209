import { lazy, Suspense, useEffect, useRef, useState, type RefObject } from "react";
import { Para } from "../../kit";

const DefinitionView = lazy(() => import("./DefinitionView"));

// Whether the element has come into view once (scrolled to, or reached by the page's tab).
function useSeen(element: RefObject<HTMLElement | null>): boolean {
  const [seen, setSeen] = useState(false);
  useEffect(() => {
    const target = element.current;
    if (seen || !target) return;
    if (!("IntersectionObserver" in window)) return setSeen(true);
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) setSeen(true);
    });
    observer.observe(target);
    return () => observer.disconnect();
  }, [element, seen]);
  return seen;
}

// An API's definition, rendered lazily: until its section comes into view it is the server's
// markup (ssr/templates/entity.html), so React's first render moves nothing and the page loads
// none of it; then DefinitionView.tsx, a chunk of its own, asks for the definition while the
// chunk of its type's renderer comes.
export function ApiDefinition({ entityRef, type }: { entityRef: string; type: string | null }) {
  const placeholder = useRef<HTMLDivElement>(null);
  const seen = useSeen(placeholder);
  const waiting = (text: string) => (
    <div className="atrium-definition" ref={placeholder} role={seen ? "status" : undefined}>
      <Para tone="subtle">{text}</Para>
    </div>
  );
  if (!seen) return waiting(`The definition (${type || "text"}) shows here.`);
  return (
    <Suspense fallback={waiting("Loading the definition…")}>
      <DefinitionView entityRef={entityRef} type={type} />
    </Suspense>
  );
}
