import { ColorSchemeProvider, GlobalEventsHandlerProvider } from "gestalt";
import { Suspense, useEffect, useRef } from "react";
import { Navigate, Route, Routes, useLocation, useNavigate, useNavigationType, useParams } from "react-router";
import { Loading } from "./components/Section";
import { Header } from "./components/Header";
import { linkHandlers } from "./links";
import { routes } from "./routes";
import { runtime } from "./runtime";
import { useColorScheme } from "./theme";

function EntityOrTeam() {
  const { kind = "" } = useParams();
  const { Route: Page } = kind.toLowerCase() === "group" ? routes.team : routes.entity;
  return <Page />;
}

function TeamRedirect() {
  const { name = "" } = useParams();
  return <Navigate replace to={`/catalog/default/group/${encodeURIComponent(name)}`} />;
}

// After a navigation to another page: its top, and the keyboard's focus on its content (a
// screen reader hears the new page). Back and Forward keep where the browser puts them.
function useNewPageFocus() {
  const location = useLocation();
  const type = useNavigationType();
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    if (location.hash || type === "POP") return;
    window.scrollTo(0, 0);
    document.getElementById("main")?.focus({ preventScroll: true });
  }, [location.pathname, location.search, location.hash, type]);
}

export function App() {
  const navigate = useNavigate();
  runtime.navigate = navigate;
  const scheme = useColorScheme();
  useNewPageFocus();
  return (
    <ColorSchemeProvider colorScheme={scheme}>
      <GlobalEventsHandlerProvider linkHandlers={linkHandlers(navigate)}>
        <Header />
        <main id="main" className="atrium-main" tabIndex={-1}>
          <Suspense fallback={<Loading />}>
            <Routes>
              <Route path="/" element={<routes.home.Route />} />
              <Route path="/catalog" element={<routes.catalog.Route />} />
              <Route path="/catalog/:namespace/:kind/:name" element={<EntityOrTeam />} />
              <Route path="/teams/:name" element={<TeamRedirect />} />
              <Route path="/workloads/:cluster/:namespace/:name" element={<routes.workload.Route />} />
              <Route path="*" element={<routes.missing.Route />} />
            </Routes>
          </Suspense>
        </main>
      </GlobalEventsHandlerProvider>
    </ColorSchemeProvider>
  );
}
