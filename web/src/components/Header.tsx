import { Link, useNavigate } from "react-router";
import { page } from "../page";

const COOKIE = "atrium_demo_user";

// The top bar, as the server's HTML lays it out (ssr/templates/base.html).
export function Header() {
  const navigate = useNavigate();
  const viewer = page.viewer.ref;
  return (
    <header className="atrium-header">
      <Link className="atrium-brand" to="/">
        Atrium
      </Link>
      <nav aria-label="Console">
        <Link to="/catalog">Catalog</Link>
      </nav>
      <form
        className="atrium-search"
        action="/catalog"
        method="get"
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          const q = new FormData(event.currentTarget).get("q")?.toString() ?? "";
          navigate(`/catalog?q=${encodeURIComponent(q)}`);
        }}
      >
        <input
          type="search"
          name="q"
          aria-label="Search the catalog"
          placeholder="Search the catalog"
        />
      </form>
      <span className="atrium-viewer">
        {page.mode === "development" && page.demoUsers ? (
          <ActAs current={viewer} />
        ) : viewer ? (
          viewer.replace(/^.*\//, "")
        ) : (
          "Not signed in"
        )}
      </span>
    </header>
  );
}

// Development only: act as a demo user (a cookie the server honours in development alone).
function ActAs({ current }: { current: string | null }) {
  const users = page.demoUsers ?? [];
  return (
    <select
      aria-label="Act as"
      value={page.viewer.via === "demo" && current ? current : ""}
      onChange={(event) => {
        const user = users.find((u) => u.ref === event.target.value);
        document.cookie = user
          ? `${COOKIE}=${encodeURIComponent(user.name)}; path=/; SameSite=Lax`
          : `${COOKIE}=; path=/; max-age=0; SameSite=Lax`;
        location.reload();
      }}
    >
      <option value="">
        {current && page.viewer.via !== "demo" ? current.replace(/^.*\//, "") : "Anonymous"}
      </option>
      {users.map((u) => (
        <option key={u.ref} value={u.ref}>
          {u.displayName}
        </option>
      ))}
    </select>
  );
}
