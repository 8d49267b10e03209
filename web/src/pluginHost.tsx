// A panel of a plugin's module, in a React root of its own inside the console's page. Where the
// server rendered it (its template in a <div data-atrium-panel="plugin:Operation">), the
// console keeps the server's nodes before its own first render replaces the page, moves them
// into the panel's place and hydrates them: the same nodes, now React's, nothing drawn twice.
// Elsewhere (a page the client navigated to) the panel renders afresh.
import { ApolloProvider } from "@apollo/client/react";
import { ColorSchemeProvider, GlobalEventsHandlerProvider } from "gestalt";
import { type ReactNode, useEffect, useLayoutEffect, useRef } from "react";
import { createRoot, hydrateRoot, type Root } from "react-dom/client";
import { ActionStatus } from "./components/Confirm";
import { linkHandlers } from "./links";
import type { ModulePanel } from "./pluginModules";
import type { PanelProps } from "./plugins";
import { runtime } from "./runtime";
import { useColorScheme } from "./theme";

const served = new Map<string, ChildNode[]>();

// Before the console's first render: the server's panels of plugins' modules, by key.
export function keepServedPanels() {
  for (const element of document.querySelectorAll<HTMLElement>("[data-atrium-panel]")) {
    served.set(element.dataset.atriumPanel ?? "", Array.from(element.childNodes));
  }
}

// What a module's panel finds around it, as the console's own panels do.
function Frame({ children }: { children: ReactNode }) {
  const scheme = useColorScheme();
  return (
    <ApolloProvider client={runtime.client!}>
      <ColorSchemeProvider colorScheme={scheme}>
        <GlobalEventsHandlerProvider linkHandlers={linkHandlers((href) => runtime.navigate(href))}>
          <ActionStatus>{children}</ActionStatus>
        </GlobalEventsHandlerProvider>
      </ColorSchemeProvider>
    </ApolloProvider>
  );
}

export function ModulePanelHost({ panel, ...props }: { panel: ModulePanel } & PanelProps) {
  const host = useRef<HTMLDivElement>(null);
  const state = useRef<{ root: Root | null; timer: number }>({ root: null, timer: 0 });
  const key = panel.requires ? `${panel.plugin}:${panel.requires}` : "";
  const Panel = panel.component;
  const element = (
    <Frame>
      <Panel {...props} />
    </Frame>
  );
  useLayoutEffect(() => {
    const current = state.current;
    window.clearTimeout(current.timer);
    if (current.root) {
      current.root.render(element);
      return;
    }
    const nodes = served.get(key);
    served.delete(key);
    if (nodes?.length) {
      host.current!.append(...nodes);
      current.root = hydrateRoot(host.current!, element);
    } else {
      current.root = createRoot(host.current!);
      current.root.render(element);
    }
  });
  useEffect(() => {
    const current = state.current;
    return () => {
      // Not while the console's root commits; a remount in the meantime keeps the root.
      current.timer = window.setTimeout(() => {
        current.root?.unmount();
        current.root = null;
      });
    };
  }, []);
  return <div ref={host} className="atrium-plugin-panel" data-atrium-panel={key || undefined} />;
}
