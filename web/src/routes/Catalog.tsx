/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import { Link, useLocation, useNavigate } from "react-router";
import {
  COLUMNS,
  choice,
  facetVariables,
  href,
  options,
  parse,
  sortHref,
  sortedBy,
  variables,
  viewerRefs,
} from "../catalogUrl";
import { EntityLink, Person } from "../components/EntityLink";
import { KindCell, LifecycleCell, NameCell } from "../components/EntityCells";
import { PageHead } from "../components/PageHead";
import { Empty, Loading, Notice } from "../components/Section";
import { document } from "../documents";
import { ButtonLink, Row, Select, Small, SmallIcon, Span, SubmitButton, Table, TBody, Td, Th, THead } from "../kit";
import { page as pageData } from "../page";
import { usePageMeta } from "../pageMeta";
import { Missing } from "./Missing";

const FILTERS: [string, string][] = [
  ["kind", "Kind"],
  ["owner", "Owner"],
  ["type", "Type"],
  ["lifecycle", "Lifecycle"],
  ["tag", "Tag"],
];

// The catalog (ssr/templates/catalog.html): filters beside a sortable table, every choice in
// the address, so Back, a reload and a shared link all show the same page.
export default function Catalog() {
  const location = useLocation();
  const navigate = useNavigate();
  const state = parse(new URLSearchParams(location.search));
  const viewer = pageData.viewer.ref;
  // "Mine" and "starred" are the viewer's: their teams and stars first.
  const personal = state.mine || state.starred;
  const who = useQuery<any>(document("CatalogViewer"), { skip: !personal });
  const [mine, starred] = viewerRefs(who.data);
  const waiting = personal && !who.data;
  const list = useQuery<any>(document("CatalogList"), { variables: variables(state, mine, starred), skip: waiting });
  const facets = useQuery<any>(document("CatalogFacets"), { variables: facetVariables(state, mine, starred), skip: waiting });
  // An address the API refuses (a cursor that is not one): the server's 400 page, here too.
  const refused = ((list.error as any)?.errors ?? []).find((e: any) => e.extensions?.code === "BAD_USER_INPUT");
  usePageMeta(
    refused ? null : state.search ? `“${state.search}” in the catalog` : "Catalog",
    "Every service, API, resource, system and domain, with who owns it.",
  );
  const entities = (list.data ?? list.previousData)?.entities;
  const facetData = facets.data ?? facets.previousData;
  const go = (changes: Parameters<typeof href>[1]) => navigate(href(state, { ...changes, after: null }));
  const title = state.search ? `“${state.search}” in the catalog` : "Catalog";
  if (refused) return <Missing status={400} reason={refused.message} />;
  const count = entities?.totalCount;
  return (
    <>
      <PageHead title={title} lead={count === undefined ? null : `${count} ${count === 1 ? "entity" : "entities"}`} />
      <div className="atrium-catalog">
        <form
          className="atrium-filters"
          method="get"
          action="/catalog"
          role="search"
          aria-label="Filter the catalog"
          onSubmit={(event) => {
            event.preventDefault();
            const q = new FormData(event.currentTarget).get("q")?.toString().trim() || null;
            go({ search: q });
          }}
        >
          <label className="atrium-field">
            <span>
              <Small tone="default">Search</Small>
            </span>
            <input key={state.search ?? ""} type="search" name="q" defaultValue={state.search ?? ""} placeholder="Name, description, tag" />
          </label>
          {FILTERS.map(([field, label]) => (
            <Select
              key={field}
              id={field}
              label={label}
              value={choice(state, field)}
              options={options(state, facetData, field, viewer).map(([value, text]) => ({ value, label: text }))}
              onChange={(value) => {
                if (field === "owner") {
                  go({ mine: value === "mine", filters: { ...state.filters, owner: value && value !== "mine" ? [value] : [] } });
                } else {
                  go({ filters: { ...state.filters, [field]: value ? [value] : [] } });
                }
              }}
            />
          ))}
          {viewer ? (
            <label className="atrium-toggle">
              <input type="checkbox" name="starred" value="1" checked={state.starred} onChange={(event) => go({ starred: event.target.checked })} />
              <Span>Starred only</Span>
            </label>
          ) : null}
          {state.sort ? <input type="hidden" name="sort" value={state.sort} /> : null}
          <div className="atrium-actions">
            <SubmitButton text="Apply filters" />
            <ButtonLink href="/catalog" text="Clear" />
          </div>
        </form>
        <div>
          {list.error && !entities ? (
            <Notice tone="error" text={`Could not load the catalog: ${list.error.message}`} />
          ) : !entities ? (
            <Loading />
          ) : entities.nodes.length ? (
            <>
              <div className="atrium-catalog-table">
                <Table label="Catalog entities">
                  <THead>
                    <Row>
                      {COLUMNS.map(([key, label]) => (
                        <Th key={key}>
                          <Link className="atrium-sort" to={sortHref(state, key)}>
                            {label}
                            {sortedBy(state, key) ? (
                              state.sort?.startsWith("-") ? (
                                <SmallIcon icon="arrow-down" label="sorted descending" />
                              ) : (
                                <SmallIcon icon="arrow-up" label="sorted ascending" />
                              )
                            ) : null}
                          </Link>
                        </Th>
                      ))}
                    </Row>
                  </THead>
                  <TBody>
                    {entities.nodes.map((e: any) => (
                      <Row key={e.ref}>
                        <NameCell entity={e} />
                        <KindCell entity={e} />
                        <Td>{e.owner ? <Person entity={e.owner} /> : null}</Td>
                        <Td>{e.system ? <EntityLink entity={e.system} /> : null}</Td>
                        <LifecycleCell entity={e} />
                      </Row>
                    ))}
                  </TBody>
                </Table>
              </div>
              <nav className="atrium-pager" aria-label="Pages">
                <Small>{`Showing ${entities.nodes.length} of ${entities.totalCount}`}</Small>
                <div className="atrium-actions">
                  {state.after ? <ButtonLink href={href(state, { after: null })} text="First page" /> : null}
                  {entities.pageInfo.hasNextPage ? <ButtonLink href={href(state, { after: entities.pageInfo.endCursor })} text="Next page" /> : null}
                </div>
              </nav>
            </>
          ) : (
            <Empty text="Nothing in the catalog matches. Try fewer filters, or another word." />
          )}
        </div>
      </div>
    </>
  );
}
