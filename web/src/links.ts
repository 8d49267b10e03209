import type { MouseEvent } from "react";

// A link within the console is a client-side navigation; anything else (another site, a new
// tab, a download, the API) the browser's.
// Pages of the console; not its assets, the API, sign-in (the server's, off to the provider),
// nor a plugin's files.
export function internal(href: string, target?: string | null): boolean {
  return href.startsWith("/") && !href.startsWith("//") && !/^\/(assets\/|graphql|auth\/|plugins\/)/.test(href) && !target;
}

// Gestalt's link handlers for the console and the panels of plugins' modules: an internal link
// clicked plainly navigates within the console; a modified click is the browser's.
export function linkHandlers(navigate: (href: string) => void) {
  return {
    onNavigation:
      ({ href, target }: { href: string; target?: null | "self" | "blank" }) =>
      ({ event }: { event: unknown }) => {
        const mouse = event as MouseEvent;
        if (!internal(href, target) || mouse.metaKey || mouse.ctrlKey || mouse.shiftKey || mouse.altKey) return;
        mouse.preventDefault();
        navigate(href);
      },
  };
}
