// The document's title and description follow the page, as the server writes them
// (ssr/pages.py): "<title> · Atrium".
import { useEffect } from "react";

export const SITE = "Atrium";
export const DESCRIPTION =
  "Atrium: who owns what at your organisation, what runs where, and what needs attention.";

export function describe(text: string | null | undefined, fallback: string): string {
  const found = (text ?? "").trim() || fallback;
  return found.length <= 300 ? found : `${found.slice(0, 297).trimEnd()}…`;
}

export function usePageMeta(title: string | null, description: string) {
  useEffect(() => {
    if (title === null) return;
    document.title = `${title} · ${SITE}`;
    document.querySelector('meta[name="description"]')?.setAttribute("content", description);
  }, [title, description]);
}
