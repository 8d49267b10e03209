import { Suspense } from "react";
import { Navigate, Route, Routes, useParams } from "react-router";
import { Header } from "./components/Header";
import { routes } from "./routes";

function EntityOrTeam() {
  const { kind = "" } = useParams();
  const { Route: Page } = kind.toLowerCase() === "group" ? routes.team : routes.entity;
  return <Page />;
}

function TeamRedirect() {
  const { name = "" } = useParams();
  return <Navigate replace to={`/catalog/default/group/${encodeURIComponent(name)}`} />;
}

function NotFound() {
  return (
    <>
      <h1 className="atrium-title">Not found</h1>
      <p>No page of the console is at this address.</p>
    </>
  );
}

export function App() {
  return (
    <>
      <Header />
      <main className="atrium-main">
        <Suspense fallback={<p className="atrium-loading" role="status">Loading…</p>}>
        <Routes>
          <Route path="/" element={<routes.home.Route />} />
          <Route path="/catalog" element={<routes.catalog.Route />} />
          <Route path="/catalog/:namespace/:kind/:name" element={<EntityOrTeam />} />
          <Route path="/teams/:name" element={<TeamRedirect />} />
          <Route path="/workloads/:cluster/:namespace/:name" element={<routes.workload.Route />} />
          <Route path="*" element={<NotFound />} />
        </Routes>
        </Suspense>
      </main>
    </>
  );
}
