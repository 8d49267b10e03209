/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import type { ReactNode } from "react";
import { useParams } from "react-router";
import { EntityLink, EntityList, Person } from "../components/EntityLink";
import { PageHead } from "../components/PageHead";
import { Card, Empty, Loading, Notice, Section } from "../components/Section";
import { Tabs } from "../components/Tabs";
import { KindCell, LifecycleCell, NameCell } from "../components/EntityCells";
import { Workloads, workloadsOf } from "../components/Workloads";
import { ownerHref } from "../catalogUrl";
import { document } from "../documents";
import { ButtonLink, ExternalLink, Row, Small, Span, Table, TBody, Td, Th, THead } from "../kit";
import { describe, usePageMeta } from "../pageMeta";
import { useVisit } from "../recent";
import { crumbsOf, displayName, entityBadges, pageSections } from "../present";
import { PluginPanels, panelSections } from "../plugins";
import { Missing } from "./Missing";
import { StarButton } from "./entity/StarButton";

// A team's page (ssr/templates/team.html).
export default function Team() {
  const { namespace = "default", name = "" } = useParams();
  const ref = `group:${namespace}/${name}`.toLowerCase();
  const page = useQuery<any>(document("TeamPage"), { variables: { ref } });
  const workloads = useQuery<any>(document("TeamWorkloads"), { variables: { ref } });
  const g = page.data?.entity;
  const title = g ? displayName(g) || name : null;
  // Kept by the browser for home's "Recently visited".
  useVisit(g ? { ref: g.ref, name: g.name, title: title } : null);
  usePageMeta(
    page.data && !g ? "Not found" : title,
    g ? describe(g.description, `The team ${title}: its members, what it owns and runs.`) : "",
  );
  if (page.error && !page.data) return <Notice tone="error" text={`Could not load ${ref}: ${page.error.message}`} />;
  if (page.loading && !g) return <Loading />;
  if (!g) return <Missing status={404} />;
  const owned = page.data.owned;
  const facts: [string, ReactNode][] = [];
  if (g.parent) facts.push(["Part of", <EntityLink entity={g.parent} />]);
  if (g.profile?.email) facts.push(["Contact", <ExternalLink href={`mailto:${g.profile.email}`}>{g.profile.email}</ExternalLink>]);
  facts.push(["Members", <Span>{String(g.members.length)}</Span>]);
  facts.push(["Owns", <Span>{String(owned.totalCount)}</Span>]);
  const sections = pageSections("team", "group", panelSections("team"), []);
  return (
    <>
      <PageHead
        title={title ?? name}
        crumbs={crumbsOf(g)}
        badges={entityBadges(g)}
        lead={g.description}
        facts={facts}
        actions={<StarButton entityRef={g.ref} />}
      />
      <Tabs sections={sections} />
      <Section id="owned" title="Owns">
        {owned.nodes.length ? (
          <>
            <div className="atrium-owned-table">
              <Table label="What the team owns">
                <THead>
                  <Row>
                    <Th>Name</Th>
                    <Th>Kind</Th>
                    <Th>Lifecycle</Th>
                    <Th>Owner</Th>
                  </Row>
                </THead>
                <TBody>
                  {owned.nodes.map((e: any) => (
                    <Row key={e.ref}>
                      <NameCell entity={e} />
                      <KindCell entity={e} />
                      <LifecycleCell entity={e} />
                      <Td>{e.owner ? <EntityLink entity={e.owner} /> : null}</Td>
                    </Row>
                  ))}
                </TBody>
              </Table>
            </div>
            {owned.totalCount > owned.nodes.length ? (
              <div className="atrium-pager">
                <Small>{`Showing ${owned.nodes.length} of ${owned.totalCount}`}</Small>
                <ButtonLink href={ownerHref(g.ref)} text="All in the catalog" />
              </div>
            ) : null}
          </>
        ) : (
          <Empty text="The team owns nothing in the catalog yet." />
        )}
      </Section>
      <Section id="members" title="Members">
        {g.members.length ? (
          <ul className="atrium-people">
            {g.members.map((m: any) => (
              <li key={m.ref} className="atrium-card">
                <Person entity={m} />
                {m.profile?.email ? <Small>{m.profile.email}</Small> : null}
              </li>
            ))}
          </ul>
        ) : (
          <Empty text="No members." />
        )}
        {g.children?.length ? (
          <div className="atrium-subteams">
            <Card title="Teams within">
              <EntityList items={g.children} empty="" />
            </Card>
          </div>
        ) : null}
      </Section>
      <PluginPanels page="team" pageRef={ref} />
      {workloads.data ? (
        <Workloads {...workloadsOf({ TeamWorkloads: workloads.data })} />
      ) : (
        <Section id="workloads" title="Workloads & logs">
          {workloads.error ? <Notice tone="error" text={`Could not load the workloads: ${workloads.error.message}`} /> : <Loading />}
        </Section>
      )}
    </>
  );
}
