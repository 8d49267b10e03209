/* eslint-disable @typescript-eslint/no-explicit-any */
import "gestalt/dist/gestalt.css";
import { useQuery } from "@apollo/client/react";
import { Button, Checkbox } from "gestalt";
import { useState } from "react";
import { useSearchParams } from "react-router";
import { EntityLink } from "../components/EntityLink";
import { document } from "../documents";

const PAGE = 20;
const FACETS: [string, string, string][] = [
  ["kinds", "kind", "Kind"],
  ["lifecycles", "lifecycle", "Lifecycle"],
  ["tags", "tag", "Tag"],
];

// Search, facets and filters live in the URL (shareable, reloadable); pages are cursors.
export default function Catalog() {
  const [params, setParams] = useSearchParams();
  const search = params.get("q") || null;
  const filter: Record<string, string[]> = {};
  for (const [, field] of FACETS) {
    const values = params.getAll(field);
    if (values.length) filter[field] = values;
  }
  const filterVar = Object.keys(filter).length ? filter : null;
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const after = cursors[cursors.length - 1];
  const list = useQuery<any>(document("CatalogList"), {
    variables: { filter: filterVar, search, first: PAGE, after },
  });
  const facets = useQuery<any>(document("CatalogFacets"), {
    variables: { filter: filterVar, search },
  });

  const toggle = (field: string, value: string, checked: boolean) => {
    const next = new URLSearchParams(params);
    const values = next.getAll(field).filter((v) => v !== value);
    next.delete(field);
    for (const v of checked ? [...values, value] : values) next.append(field, v);
    setCursors([null]);
    setParams(next);
  };
  const entities = list.data?.entities;
  return (
    <>
      <h1 className="atrium-title">{search ? `Catalog: “${search}”` : "Catalog"}</h1>
      <div className="atrium-grid">
        <aside className="atrium-facets" aria-label="Filters">
          {facets.error ? (
            <p className="atrium-error" role="alert">
              Could not load the filters: {facets.error.message}
            </p>
          ) : null}
          {FACETS.map(([key, field, legend]) =>
            facets.data?.[key]?.length ? (
              <fieldset key={key}>
                <legend>{legend}</legend>
                {facets.data[key].map((f: any) => (
                  <Checkbox
                    key={f.value}
                    id={`facet-${field}-${f.value}`}
                    label={`${f.value} (${f.count})`}
                    checked={(filter[field] ?? []).includes(f.value)}
                    onChange={({ checked }) => toggle(field, f.value, checked)}
                    size="sm"
                  />
                ))}
              </fieldset>
            ) : null,
          )}
        </aside>
        <section aria-labelledby="results">
          <h2 id="results" className="atrium-muted">
            {entities ? `${entities.totalCount} entities` : "Entities"}
          </h2>
          {list.error ? (
            <p className="atrium-error" role="alert">
              Could not load the catalog: {list.error.message}
            </p>
          ) : !entities ? (
            <p className="atrium-loading" role="status">
              Loading…
            </p>
          ) : (
            <ul className="atrium-list">
              {entities.nodes.map((e: any) => (
                <li key={e.ref}>
                  <EntityLink entity={e} /> <span className="atrium-muted">{e.kind}</span>
                  {e.description ? <div className="atrium-muted">{e.description}</div> : null}
                </li>
              ))}
            </ul>
          )}
          <div className="atrium-pager">
            <Button
              text="Previous"
              size="md"
              disabled={cursors.length < 2}
              onClick={() => setCursors(cursors.slice(0, -1))}
            />
            <Button
              text="Next"
              size="md"
              disabled={!entities?.pageInfo.hasNextPage}
              onClick={() => setCursors([...cursors, entities.pageInfo.endCursor])}
            />
          </div>
        </section>
      </div>
    </>
  );
}
