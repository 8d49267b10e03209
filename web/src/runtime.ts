// What the console shares with the panels of plugins' modules, each rendered in a React root of
// its own (pluginHost.tsx): the Apollo client and the router's navigation.
import type { ApolloClient } from "@apollo/client";

export const runtime: {
  client: ApolloClient | null;
  navigate: (href: string) => void;
} = {
  client: null,
  navigate: (href) => location.assign(href),
};
