/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import { useEffect, useState } from "react";
import { useNavigate } from "react-router";
import { document } from "../documents";
import { entityUrl } from "../urls";

// A search box that suggests entities as a person types (a misspelt name still finds its
// service) and opens the one they pick; Enter on no pick searches the catalog. WAI-ARIA's
// combobox pattern: arrow keys move through the list, Escape closes it.
export function Suggest() {
  const navigate = useNavigate();
  const [text, setText] = useState("");
  const [search, setSearch] = useState("");
  const [active, setActive] = useState(-1);
  const [open, setOpen] = useState(false);
  useEffect(() => {
    const timer = setTimeout(() => setSearch(text.trim()), 150);
    return () => clearTimeout(timer);
  }, [text]);
  const { data, error } = useQuery<any>(document("Suggest"), {
    variables: { search },
    skip: search.length < 2,
  });
  const options: any[] = search.length < 2 ? [] : (data?.entities.nodes ?? []);
  const expanded = open && text.trim().length >= 2 && (options.length > 0 || !!error);
  const pick = (ref: string) => {
    setOpen(false);
    navigate(entityUrl(ref));
  };
  return (
    <div className="atrium-suggest">
      <input
        type="search"
        role="combobox"
        aria-label="Search the catalog"
        aria-autocomplete="list"
        aria-expanded={expanded}
        aria-controls="suggestions"
        aria-activedescendant={expanded && active >= 0 ? `suggestion-${active}` : undefined}
        placeholder="Search services, APIs, teams and people"
        value={text}
        onChange={(event) => {
          setText(event.target.value);
          setActive(-1);
          setOpen(true);
        }}
        onKeyDown={(event) => {
          if (event.key === "ArrowDown") setActive(Math.min(active + 1, options.length - 1));
          else if (event.key === "ArrowUp") setActive(Math.max(active - 1, -1));
          else if (event.key === "Escape") setOpen(false);
          else if (event.key === "Enter") {
            if (active >= 0 && options[active]) pick(options[active].ref);
            else if (text.trim()) navigate(`/catalog?q=${encodeURIComponent(text.trim())}`);
          } else return;
          event.preventDefault();
        }}
      />
      <ul id="suggestions" role="listbox" aria-label="Suggestions" hidden={!expanded}>
        {error ? (
          <li role="option" aria-selected={false} aria-disabled className="atrium-error">
            Suggestions failed: {error.message}
          </li>
        ) : null}
        {options.map((e, index) => (
          <li
            key={e.ref}
            id={`suggestion-${index}`}
            role="option"
            aria-selected={index === active}
            onMouseDown={(event) => {
              event.preventDefault();
              pick(e.ref);
            }}
          >
            {e.title || e.name} <span className="atrium-muted">{e.ref}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
