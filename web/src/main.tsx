// The client: writes the server's embedded answers into the cache, loads the current route,
// then renders in place of the server's HTML (createRoot: that HTML is Jinja's, not React's),
// as a transition, so the work is cut into slices that leave the browser responsive.
import { ApolloProvider } from "@apollo/client/react";
import { startTransition, StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter } from "react-router";
import { client as makeClient } from "./apollo";
import { App } from "./App";
import { documents } from "./documents";
import { embedded } from "./page";
import { keepServedPanels } from "./pluginHost";
import { loadPluginModules } from "./pluginModules";
import { routeOf, routes } from "./routes";
import { runtime } from "./runtime";

export async function start() {
  const client = makeClient();
  runtime.client = client;
  // Plugins' modules with panels on this page, before their answers go into the cache (their
  // operations are theirs) and before the first render (their panels hydrate the server's).
  await loadPluginModules(routeOf(location.pathname));
  // The answers the server rendered from, into the cache: the page's queries find them there
  // and ask /graphql nothing.
  for (const { operationName, variables, data } of embedded) {
    const query = documents[operationName];
    if (query) client.writeQuery({ query, variables, data });
  }
  await routes[routeOf(location.pathname)].preload().catch(() => undefined);
  keepServedPanels();
  const root = createRoot(document.getElementById("root")!);
  startTransition(() =>
    root.render(
      <StrictMode>
        <ApolloProvider client={client}>
          <BrowserRouter>
            <App />
          </BrowserRouter>
        </ApolloProvider>
      </StrictMode>,
    ),
  );
  // The rest of Gestalt's styles (overlays, what only React renders), once the page is up.
  void import("./styles/late");
}
