import logo from "../../public/logo.svg?raw";
import { Link, useLocation } from "react-router";
import { Avatar, ButtonLink, IconButton, SubmitButton } from "../kit";
import { page } from "../page";
import { toggleColorScheme } from "../theme";
import { Suggest } from "./Suggest";

const COOKIE = "atrium_demo_user";

// The frame's header, as the server's HTML lays it out (ssr/templates/_header.html).
export function Header() {
  const { pathname, search } = useLocation();
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
            {viewer.via === "session" ? (
              <>
                <Avatar name={viewer.name ?? ""} src={viewer.picture} size="sm" />
                <span className="atrium-viewer-name">{viewer.name}</span>
                {/* A form, not a script: signing out works without JavaScript. */}
                <form className="atrium-signout" method="post" action="/auth/logout">
                  <SubmitButton text="Sign out" gray />
                </form>
              </>
            ) : page.demoUsers ? (
              <ActAs />
            ) : viewer.ref ? (
              <>
                <Avatar name={viewer.name ?? ""} src={viewer.picture} size="sm" />
                <span className="atrium-viewer-name">{viewer.name}</span>
              </>
            ) : page.signIn ? (
              <ButtonLink href={signInHref(pathname, search)} text="Sign in" />
            ) : (
              <span className="atrium-viewer-name">Not signed in</span>
            )}
          </div>
        </div>
      </header>
      {viewer.via === "session" && viewer.known === false ? (
        <p className="atrium-stranger" role="status">
          You are signed in as {viewer.name}, whom the directory does not know: you can read, not change.
        </p>
      ) : null}
    </>
  );
}

// Sign in, then back to this page (as ssr/viewer.py's sign_in_href writes it).
function signInHref(pathname: string, search: string) {
  return `/auth/login?${new URLSearchParams({ next: pathname + search })}`;
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
