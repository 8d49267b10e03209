import type { ReactNode } from "react";
import { CardTitle, Para, SectionTitle } from "../kit";

// A section of a page, a target of its tabs (ssr/templates/_macros.html, section).
export function Section({
  id,
  title,
  actions,
  children,
}: {
  id: string;
  title: string;
  actions?: ReactNode;
  children?: ReactNode;
}) {
  return (
    <section className="atrium-section" id={id} aria-labelledby={`${id}-title`}>
      <div className="atrium-section-head">
        <SectionTitle id={`${id}-title`}>{title}</SectionTitle>
        {actions ? <div className="atrium-actions">{actions}</div> : null}
      </div>
      {children}
    </section>
  );
}

// A card with a title (the card macro).
export function Card({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="atrium-card">
      <CardTitle>{title}</CardTitle>
      {children}
    </div>
  );
}

// Nothing here yet, said plainly (the empty macro).
export function Empty({ text }: { text: string }) {
  return (
    <div className="atrium-empty">
      <Para tone="subtle">{text}</Para>
    </div>
  );
}

// A message in the flow of a page (the notice macro).
export function Notice({ text, tone = "" }: { text: string; tone?: "" | "error" | "success" }) {
  return (
    <div className={`atrium-notice${tone ? ` atrium-notice-${tone}` : ""}`} role={tone === "error" ? "alert" : "status"}>
      <Para>{text}</Para>
    </div>
  );
}

export function Loading() {
  return (
    <p className="atrium-loading" role="status">
      Loading…
    </p>
  );
}
