import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The server writes the HTML (ssr/): the build is the entry, its lazy route chunks and their
// CSS, hashed, at the root of dist/ (served as /assets/), with Vite's manifest for the server.
export default defineConfig({
  base: "/assets/",
  plugins: [react()],
  build: {
    manifest: true,
    outDir: "dist",
    assetsDir: "",
    rollupOptions: { input: "src/boot.ts" },
    chunkSizeWarningLimit: 1200,
  },
  server: {
    // `make web-dev`: the API (and its websocket) of `make run`.
    proxy: { "/graphql": { target: "http://127.0.0.1:8000", ws: true } },
  },
});
