import logo from "../../public/logo.svg?raw";
import { Link, useLocation } from "react-router";
import { Avatar, IconButton } from "../kit";
import { page } from "../page";
import { toggleColorScheme } from "../theme";
import { Suggest } from "./Suggest";

const COOKIE = "atrium_demo_user";

// The frame's header, as the server's HTML lays it out (ssr/templates/_header.html).
export function Header() {
  const { pathname } = useLocation();
  const current = (path: string) => (path === "/" ? pathname === "/" : pathname === path);
  const viewer = page.viewer;
  return (
    <>
      <a className="atrium-skip" href="#main">
        Skip to content
      </a>
      <header className="atrium-header">
        <Link className="atrium-brand" to="/">
          <span className="atrium-logo" dangerouslySetInnerHTML={{ __html: logo.trim() }} />
          <span className="atrium-brand-name">Atrium</span>
        </Link>
        <nav className="atrium-nav" aria-label="Console">
          <Link to="/" aria-current={current("/") ? "page" : undefined}>
            Home
          </Link>
          <Link to="/catalog" aria-current={current("/catalog") ? "page" : undefined}>
            Catalog
          </Link>
        </nav>
        <Suggest id="header-suggestions" className="atrium-search" />
        <div className="atrium-tools">
          <IconButton icon="contrast" label="Switch between light and dark colours" onClick={toggleColorScheme} />
          <div className="atrium-viewer">
            {page.demoUsers ? (
              <ActAs />
            ) : viewer.ref ? (
              <>
                <Avatar name={viewer.name ?? ""} src={viewer.picture} size="sm" />
                <span className="atrium-viewer-name">{viewer.name}</span>
              </>
            ) : (
              <span className="atrium-viewer-name">Not signed in</span>
            )}
          </div>
        </div>
      </header>
    </>
  );
}

// Development only: act as a demo user (a cookie the server honours in development alone).
function ActAs() {
  const users = page.demoUsers ?? [];
  const viewer = page.viewer;
  const acting = viewer.via === "demo" ? viewer.ref : null;
  return (
    <select
      aria-label="Act as"
      value={acting ?? ""}
      onChange={(event) => {
        const user = users.find((u) => u.ref === event.target.value);
        document.cookie = user
          ? `${COOKIE}=${encodeURIComponent(user.name)}; path=/; SameSite=Lax`
          : `${COOKIE}=; path=/; max-age=0; SameSite=Lax`;
        location.reload();
      }}
    >
      <option value="">{viewer.ref && !acting ? viewer.name : "Anonymous"}</option>
      {users.map((u) => (
        <option key={u.ref} value={u.ref}>
          {u.displayName}
        </option>
      ))}
    </select>
  );
}
