/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import { EntityLink, EntityList } from "../components/EntityLink";
import { KindCell, LifecycleCell, NameCell } from "../components/EntityCells";
import { PageHead } from "../components/PageHead";
import { Empty, Loading, Notice, Section } from "../components/Section";
import { kindHref } from "../catalogUrl";
import { document } from "../documents";
import { AppLink, ButtonLink, Row, Small, Status, Table, TBody, Td, Th, THead } from "../kit";
import { page } from "../page";
import { DESCRIPTION, usePageMeta } from "../pageMeta";
import { attentionStatus, displayName, homeLead, homeServices, kindLabel } from "../present";
import { Recent } from "./home/Recent";

// Home (ssr/templates/home.html): for a signed-in person their teams' services and what they
// starred; for anyone a way into the catalog.
export default function Home() {
  const { data, error, loading } = useQuery<any>(document("HomePage"));
  usePageMeta("Home", DESCRIPTION);
  if (error && !data) return <Notice tone="error" text={`Could not load your teams: ${error.message}`} />;
  if (loading && !data) return <Loading />;
  const v = data.viewer;
  if (!v.ref) {
    return (
      <>
        <PageHead
          title="Atrium"
          lead="Who owns what, what runs where, and what needs attention: search the catalog, or browse it by kind."
        />
        <Section id="browse" title="Browse the catalog">
          <ul className="atrium-cards atrium-list-plain">
            {data.kinds.map((k: any) => (
              <li key={k.value} className="atrium-card">
                <AppLink href={kindHref(k.value)} strong>
                  {kindLabel(k.value, true)}
                </AppLink>
                <Small>{`${k.count} in the catalog`}</Small>
              </li>
            ))}
          </ul>
        </Section>
      </>
    );
  }
  const services = homeServices(v);
  return (
    <>
      <PageHead
        title={`Welcome, ${v.user ? displayName(v.user) : (page.viewer.name ?? v.ref.slice(v.ref.lastIndexOf("/") + 1))}`}
        lead={homeLead(v)}
      />
      <Section id="attention" title="Needs attention">
        {v.attention?.length ? (
          <ul className="atrium-list atrium-attention">
            {v.attention.map((item: any, i: number) => (
              <li key={`${item.entity.ref}-${i}`}>
                <div className="atrium-cell">
                  <Status type={attentionStatus(item.level)} title={item.title} />
                  <div className="atrium-attention-about">
                    <EntityLink entity={item.entity} strong />
                    {item.since ? <Small>{`since ${item.since.slice(0, 16).replace("T", " ")} UTC`}</Small> : null}
                  </div>
                  {item.detail ? <Small>{item.detail}</Small> : null}
                </div>
                {item.href ? (
                  <div className="atrium-actions">
                    <ButtonLink href={item.href} text="Look" />
                  </div>
                ) : null}
              </li>
            ))}
          </ul>
        ) : (
          <Empty text="Nothing needs attention: your teams' services run as they should." />
        )}
      </Section>
      <Section id="services" title="Your teams' services">
        {services.length ? (
          <div className="atrium-services-table">
            <Table label="Your teams' services">
              <THead>
                <Row>
                  <Th>Name</Th>
                  <Th>State</Th>
                  <Th>Team</Th>
                  <Th>Kind</Th>
                  <Th>Lifecycle</Th>
                </Row>
              </THead>
              <TBody>
                {services.map(([e, team, worst]) => (
                  <Row key={e.ref}>
                    <NameCell entity={e} />
                    <Td>{worst ? <Status type={attentionStatus(worst.level)} title={worst.title} /> : <Status type="ok" title="Fine" />}</Td>
                    <Td>
                      <EntityLink entity={team} />
                    </Td>
                    <KindCell entity={e} />
                    <LifecycleCell entity={e} />
                  </Row>
                ))}
              </TBody>
            </Table>
          </div>
        ) : v.groups.length ? (
          <Empty text="Your teams own nothing in the catalog yet." />
        ) : (
          <Empty text="You are in no team yet: the directory lists none for you." />
        )}
      </Section>
      <div className="atrium-columns">
        <Section id="starred" title="Starred">
          {v.starred?.length ? (
            <div className="atrium-card">
              <EntityList items={v.starred} empty="" />
            </div>
          ) : (
            <Empty text="Star a page to find it here." />
          )}
        </Section>
        <Section id="recent" title="Recently visited">
          <Recent />
        </Section>
      </div>
    </>
  );
}
