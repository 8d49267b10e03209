// The on-call plugin's console module, built with Vite's library mode:
//   npx vite build --config console-src/vite.config.mjs      (from examples/plugins/oncall)
// React and the SDK stay imports: the console's page maps them to its own modules.
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));

export default {
  root: here,
  logLevel: "warn",
  build: {
    outDir: process.env.ONCALL_CONSOLE_OUT || `${here}../atrium_oncall/console`,
    emptyOutDir: false,
    minify: false,
    lib: { entry: `${here}panels.tsx`, formats: ["es"], fileName: () => "panels.js" },
    rollupOptions: { external: ["react", "react/jsx-runtime", "@atrium/console"] },
  },
};
