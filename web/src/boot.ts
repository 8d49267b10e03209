// The entry: the page's first paint is the server's HTML with its inline CSS, and the client's
// code starts after it, so nothing the browser downloads or runs for the client holds that
// paint up. Then every chunk the page needs is fetched at once (the page lists them: ssr/vite.py)
// and the libraries run one after another, each in a task of its own: a page busy for a long
// stretch cannot answer a tap (Lighthouse counts such stretches as Total Blocking Time).
import { page } from "./page";
import { preloadCurrentRoute, routeOf } from "./routeOf";

const yieldToPage = () => new Promise((resolve) => setTimeout(resolve, 0));

function fetchAhead(urls: string[]) {
  for (const href of urls) {
    const link = document.createElement("link");
    link.rel = "modulepreload";
    link.href = href;
    document.head.appendChild(link);
  }
}

async function start() {
  const here = routeOf(location.pathname);
  const modules = (page.plugins ?? []).filter((m) => m.pages.includes(here)).map((m) => m.module);
  fetchAhead([...(page.chunks ?? []), ...modules]);
  for (const library of [
    // The app's own modules over each library (not the library's whole namespace, which would
    // keep every part of it in the build).
    () => import("react-dom/client"),
    () => import("./kit"),
    () => import("./apollo"),
    () => import("./App"),
    preloadCurrentRoute,
  ]) {
    await library();
    await yieldToPage();
  }
  const main = await import("./main");
  await main.start();
}

if (document.visibilityState === "hidden") void start();
else requestAnimationFrame(() => setTimeout(() => void start(), 0));
