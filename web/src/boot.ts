// The entry: the page's first paint is the server's HTML with its inline CSS, and the client's
// code starts after it, so nothing the browser downloads or runs for the client holds that
// paint up. (Its chunks then load at once: the page's route in parallel with the app.)
import { preloadCurrentRoute } from "./routeOf";

function start() {
  preloadCurrentRoute();
  void import("./main").then((main) => main.start());
}

if (document.visibilityState === "hidden") start();
else requestAnimationFrame(() => setTimeout(start, 0));
