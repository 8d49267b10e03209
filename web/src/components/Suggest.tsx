/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import { useEffect, useState } from "react";
import { useLocation, useNavigate } from "react-router";
import { document } from "../documents";
import { entityUrl, kindLabel } from "../present";

const SEARCH_ICON =
  "M10 16a6 6 0 1 1 .02-12.01A6 6 0 0 1 10 16m13.13 2.88L21 16.75l-2.13-2.13a10 10 0 1 0-4.24 4.24L16.75 21l2.13 2.13a3 3 0 0 0 4.25 0 3 3 0 0 0 0-4.24";

// A search box that suggests entities as a person types (a misspelt name still finds its
// service) and opens the one they pick; Enter with none picked searches the catalog (also
// without JavaScript: it is a form). WAI-ARIA's combobox: arrow keys move through the list,
// Escape closes it. The server writes the same box (ssr/templates/_header.html).
export function Suggest({ id, className }: { id: string; className: string }) {
  const navigate = useNavigate();
  const location = useLocation();
  const initial = location.pathname === "/catalog" ? new URLSearchParams(location.search).get("q") ?? "" : "";
  const [text, setText] = useState(initial);
  const [search, setSearch] = useState("");
  const [active, setActive] = useState(-1);
  const [open, setOpen] = useState(false);
  useEffect(() => setText(initial), [initial]);
  useEffect(() => {
    const timer = setTimeout(() => setSearch(text.trim()), 150);
    return () => clearTimeout(timer);
  }, [text]);
  const { data, error } = useQuery<any>(document("Suggest"), {
    variables: { search },
    skip: search.length < 2 || !open,
  });
  const options: any[] = search.length < 2 ? [] : (data?.entities.nodes ?? []);
  const expanded = open && text.trim().length >= 2 && (options.length > 0 || !!error);
  const pick = (ref: string) => {
    setOpen(false);
    navigate(entityUrl({ ref }));
  };
  const submit = () => {
    setOpen(false);
    if (text.trim()) navigate(`/catalog?${new URLSearchParams({ q: text.trim() })}`);
  };
  return (
    <form
      className={className}
      action="/catalog"
      method="get"
      role="search"
      onSubmit={(event) => {
        event.preventDefault();
        submit();
      }}
    >
      <svg className="atrium-search-icon" viewBox="0 0 24 24" aria-hidden="true">
        <path d={SEARCH_ICON} />
      </svg>
      <input
        type="search"
        name="q"
        role="combobox"
        aria-label="Search the catalog"
        aria-autocomplete="list"
        aria-expanded={expanded}
        aria-controls={id}
        aria-activedescendant={expanded && active >= 0 ? `${id}-${active}` : undefined}
        placeholder="Search services, APIs, teams and people"
        autoComplete="off"
        value={text}
        onChange={(event) => {
          setText(event.target.value);
          setActive(-1);
          setOpen(true);
        }}
        onBlur={() => setOpen(false)}
        onKeyDown={(event) => {
          if (event.key === "ArrowDown") setActive(Math.min(active + 1, options.length - 1));
          else if (event.key === "ArrowUp") setActive(Math.max(active - 1, -1));
          else if (event.key === "Escape") setOpen(false);
          else if (event.key === "Enter") {
            if (expanded && active >= 0 && options[active]) pick(options[active].ref);
            else submit();
          } else return;
          event.preventDefault();
        }}
      />
      <ul id={id} className="atrium-suggestions" role="listbox" aria-label="Suggestions" hidden={!expanded}>
        {error ? (
          <li role="option" aria-selected={false} aria-disabled>
            Suggestions failed: {error.message}
          </li>
        ) : null}
        {options.map((e, index) => (
          <li
            key={e.ref}
            id={`${id}-${index}`}
            role="option"
            aria-selected={index === active}
            onMouseDown={(event) => {
              event.preventDefault();
              pick(e.ref);
            }}
          >
            <span>{e.title || e.name}</span>
            <small>
              {kindLabel(e.kind)} · {e.ref}
            </small>
          </li>
        ))}
      </ul>
    </form>
  );
}
