// The hello plugin's console module, built with the console's Vite (web/node_modules):
//   web/node_modules/.bin/vite build --config tests/example_plugin/console-src/vite.config.mjs
// React and the SDK stay imports: the console's page maps them to its own modules.
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));

export default {
  root: here,
  logLevel: "warn",
  build: {
    outDir: process.env.HELLO_CONSOLE_OUT || `${here}../atrium_hello/console`,
    emptyOutDir: false,
    minify: false,
    lib: { entry: `${here}panels.tsx`, formats: ["es"], fileName: () => "panels.js" },
    rollupOptions: { external: ["react", "react/jsx-runtime", "@atrium/console"] },
  },
};
