// The entity pages this browser opened lately, newest first (localStorage): home lists them.
import { useEffect } from "react";

const KEY = "atrium-recent";
const KEEP = 8;

export interface Visit {
  ref: string;
  name: string;
  title?: string | null;
}

export function recentVisits(): Visit[] {
  try {
    const found = JSON.parse(localStorage.getItem(KEY) ?? "[]");
    return Array.isArray(found) ? found.filter((v) => typeof v?.ref === "string").slice(0, KEEP) : [];
  } catch {
    return [];
  }
}

export function useVisit(entity: Visit | null | undefined) {
  const ref = entity?.ref;
  useEffect(() => {
    if (!entity || !ref) return;
    const visit = { ref, name: entity.name, title: entity.title ?? null };
    try {
      localStorage.setItem(KEY, JSON.stringify([visit, ...recentVisits().filter((v) => v.ref !== ref)].slice(0, KEEP)));
    } catch {
      // storage full or off: nothing remembered
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [ref]);
}
