import { defineConfig } from "vite";

// The kit's templates for the server: kit/snippets.tsx built for Node, run once by
// `npm run build` (it writes dist/.server/kit.json and critical.css, which the server reads).
export default defineConfig({
  build: {
    ssr: "src/kit/snippets.tsx",
    outDir: "dist-kit",
    emptyOutDir: true,
    minify: false,
  },
  logLevel: "warn",
});
