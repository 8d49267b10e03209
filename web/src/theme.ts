// Light or dark: the system's preference, unless the person chose with the header's toggle (kept
// in localStorage; the page's inline script applies it before the first paint, ssr/console.py).
import { useSyncExternalStore } from "react";

const KEY = "atrium-color-scheme";
const DARK = "(prefers-color-scheme: dark)";
const listeners = new Set<() => void>();

export function colorScheme(): "light" | "dark" {
  const chosen = document.documentElement.getAttribute("data-color-scheme");
  if (chosen === "dark" || chosen === "light") return chosen;
  return window.matchMedia?.(DARK).matches ? "dark" : "light";
}

export function toggleColorScheme() {
  const next = colorScheme() === "dark" ? "light" : "dark";
  document.documentElement.setAttribute("data-color-scheme", next);
  try {
    localStorage.setItem(KEY, next);
  } catch {
    // private browsing: the choice lasts for this page
  }
  for (const listener of listeners) listener();
}

function subscribe(listener: () => void) {
  listeners.add(listener);
  const media = window.matchMedia?.(DARK);
  media?.addEventListener("change", listener);
  return () => {
    listeners.delete(listener);
    media?.removeEventListener("change", listener);
  };
}

export function useColorScheme(): "light" | "dark" {
  return useSyncExternalStore(subscribe, colorScheme, () => "light");
}
