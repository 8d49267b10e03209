import "./styles/frame.css";

import { ApolloProvider } from "@apollo/client/react";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter } from "react-router";
import { client as makeClient } from "./apollo";
import { App } from "./App";
import { documents } from "./documents";
import { embedded } from "./page";
import { routeOf, routes } from "./routes";

const client = makeClient();

// The answers the server rendered from, into the cache: the page's queries find them there
// and ask /graphql nothing.
for (const { operationName, variables, data } of embedded) {
  const query = documents[operationName];
  if (query) client.writeQuery({ query, variables, data });
}

async function start() {
  // The current route's chunk first (the server preloaded it): the first render then shows
  // the page at once, in place of the server's HTML (createRoot: that HTML is not React's).
  const current = routeOf(location.pathname);
  if (current) await routes[current].preload().catch(() => undefined);
  createRoot(document.getElementById("root")!).render(
    <StrictMode>
      <ApolloProvider client={client}>
        <BrowserRouter>
          <App />
        </BrowserRouter>
      </ApolloProvider>
    </StrictMode>,
  );
}

void start();
