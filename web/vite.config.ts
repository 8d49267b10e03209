import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The server writes the HTML (ssr/): the build is the entry, its lazy route chunks and their
// CSS, hashed, at the root of dist/ (served as /assets/), with Vite's manifest for the server.
// The libraries are chunks of their own, so the entry can run each in a task of its own
// (src/boot.ts): a browser busy for long cannot answer a click.

// A library's modules, installed at the top of node_modules: a copy nested under another package
// (which only a lazily loaded chunk may use) stays with that chunk.
function library(...names: string[]): RegExp {
  const escaped = names.map((n) => n.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"));
  return new RegExp(`^(?!.*node_modules.*node_modules).*node_modules[\\\\/](${escaped.join("|")})[\\\\/]`);
}

export default defineConfig({
  base: "/assets/",
  plugins: [react()],
  build: {
    manifest: true,
    outDir: "dist",
    assetsDir: "",
    rollupOptions: {
      // The entry, and the console's SDK for plugins' modules (builder.console): the names their
      // modules import (@atrium/console, react, react/jsx-runtime), which the page's import map
      // points at these (ssr/console.py, SDK_MODULES); their exports are kept.
      input: {
        boot: "src/boot.ts",
        "console-sdk": "src/sdk/index.ts",
        "console-react": "src/sdk/react.ts",
        "console-jsx-runtime": "src/sdk/jsx-runtime.ts",
      },
      preserveEntrySignatures: "exports-only",
      output: {
        codeSplitting: {
          groups: [
            { name: "react", test: library("react", "react-dom", "scheduler") },
            { name: "gestalt", test: library("gestalt", "gestalt-design-tokens", "@floating-ui", "classnames", "tabbable") },
            {
              name: "apollo",
              test: library("@apollo", "graphql", "graphql-ws", "rxjs", "@wry", "optimism", "tslib", "ts-invariant", "zen-observable", "symbol-observable"),
            },
            { name: "router", test: library("react-router", "cookie", "set-cookie-parser") },
          ],
        },
      },
    },
    // Swagger UI (1.4 MB) loads only where an OpenAPI definition shows.
    chunkSizeWarningLimit: 1500,
  },
  server: {
    // `make web-dev`: the API (and its websocket) of `make run`.
    proxy: { "/graphql": { target: "http://127.0.0.1:8000", ws: true } },
  },
});
