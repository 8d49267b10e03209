/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import type { ReactNode } from "react";
import { useParams } from "react-router";
import { EntityLink, EntityList, Person } from "../components/EntityLink";
import { PageHead } from "../components/PageHead";
import { Card, Loading, Notice, Section } from "../components/Section";
import { Tabs } from "../components/Tabs";
import { Workloads, workloadsOf } from "../components/Workloads";
import { document } from "../documents";
import { Badge, ExternalLink, Small, Span } from "../kit";
import { describe, usePageMeta } from "../pageMeta";
import { useVisit } from "../recent";
import { addressProblem, crumbsOf, displayName, entityBadges, kindLabel, pageSections } from "../present";
import { PluginPanels, panelSections } from "../plugins";
import { Missing } from "./Missing";
import { ApiDefinition } from "./entity/ApiDefinition";
import { StarButton } from "./entity/StarButton";

// The entity's relations as the overview lists them, in the server's order (ssr/pages.py).
export const RELATION_LISTS: [string, string, string][] = [
  ["dependencies", "Dependencies", "No dependencies."],
  ["dependents", "Dependents", "Nothing depends on it."],
  ["providesApis", "Provided APIs", "Provides no API."],
  ["consumesApis", "Consumed APIs", "Consumes no API."],
  ["providers", "Providers", "No provider."],
  ["consumers", "Consumers", "No consumer."],
  ["components", "Components", "No components."],
  ["apis", "APIs", "No APIs."],
  ["resources", "Resources", "No resources."],
  ["systems", "Systems", "No systems."],
  ["memberOf", "Teams", "In no team."],
];

// An entity's page (ssr/templates/entity.html).
export default function Entity() {
  const { namespace = "", kind = "", name = "" } = useParams();
  const ref = `${kind}:${namespace}/${name}`.toLowerCase();
  const lower = kind.toLowerCase();
  const invalid = addressProblem(namespace, kind, name) !== null;
  const page = useQuery<any>(document("EntityPage"), { variables: { ref }, skip: invalid });
  const workloads = useQuery<any>(document("EntityWorkloads"), { variables: { ref }, skip: invalid || lower !== "component" });
  const e = page.data?.entity;
  const title = e ? displayName(e) : null;
  // Kept by the browser for home's "Recently visited".
  useVisit(e ? { ref: e.ref, name: e.name, title: title } : null);
  usePageMeta(
    invalid ? null : page.data && !e ? "Not found" : title,
    e ? describe(e.description, `The ${kindLabel(lower).toLowerCase()} ${title} in the catalog: its owner and relations.`) : "",
  );
  const problem = addressProblem(namespace, kind, name);
  if (problem) return <Missing status={problem.status} reason={problem.reason} />;
  if (page.error && !page.data) return <Notice tone="error" text={`Could not load ${ref}: ${page.error.message}`} />;
  if (page.loading && !e) return <Loading />;
  if (!e) return <Missing status={404} />;
  const facts: [string, ReactNode][] = [];
  if (e.owner) facts.push(["Owner", <Person entity={e.owner} />]);
  else if (e.ownerRef)
    facts.push([
      "Owner",
      <>
        <Span>{e.ownerRef}</Span> <Small>not in the catalog</Small>
      </>,
    ]);
  if (e.system) facts.push(["System", <EntityLink entity={e.system} />]);
  const sections = pageSections("entity", lower, panelSections("entity", lower), []);
  return (
    <>
      <PageHead
        title={title ?? name}
        crumbs={crumbsOf(e)}
        badges={entityBadges(e)}
        lead={e.description}
        facts={facts}
        actions={<StarButton entityRef={e.ref} />}
      />
      <Tabs sections={sections} />
      <Section id="overview" title="Overview">
        <div className="atrium-columns">
          <div className="atrium-stack">
            {RELATION_LISTS.filter(([field]) => e[field] !== undefined).map(([field, heading, empty]) => (
              <Card key={field} title={heading}>
                <EntityList items={e[field]} empty={empty} />
              </Card>
            ))}
          </div>
          <div className="atrium-stack">
            {e.owner ? (
              <Card title="Owner">
                <Person entity={e.owner} />
                {e.owner.members?.length ? <Small>{`${e.owner.members.length} members`}</Small> : null}
                {e.owner.profile?.email ? (
                  <ExternalLink href={`mailto:${e.owner.profile.email}`}>{e.owner.profile.email}</ExternalLink>
                ) : null}
              </Card>
            ) : null}
            {e.system ? (
              <Card title="System">
                <div className="atrium-cell">
                  <EntityLink entity={e.system} strong />
                  {e.system.domain ? <Small>{`in the ${e.system.domain.title || e.system.domain.name} domain`}</Small> : null}
                </div>
              </Card>
            ) : null}
            {e.tags?.length ? (
              <Card title="Tags">
                <div className="atrium-tags">
                  {e.tags.map((tag: string) => (
                    <Badge key={tag} text={tag} />
                  ))}
                </div>
              </Card>
            ) : null}
            {e.links?.length ? (
              <Card title="Links">
                <ul className="atrium-list">
                  {e.links.map((link: any) => (
                    <li key={link.url}>
                      <ExternalLink href={link.url}>{link.title || link.url}</ExternalLink>
                    </li>
                  ))}
                </ul>
              </Card>
            ) : null}
            {(e.unavailable ?? []).map((u: any) => (
              <Notice key={u.field} tone="error" text={`Its ${u.field} could not be read: ${u.reason}`} />
            ))}
          </div>
        </div>
      </Section>
      <PluginPanels page="entity" kind={lower} pageRef={ref} />
      {lower === "component" ? (
        workloads.data ? (
          <Workloads {...workloadsOf({ EntityWorkloads: workloads.data })} />
        ) : (
          <Section id="workloads" title="Workloads & logs">
            {workloads.error ? <Notice tone="error" text={`Could not load the workloads: ${workloads.error.message}`} /> : <Loading />}
          </Section>
        )
      ) : null}
      {e.kind === "API" ? (
        <Section id="definition" title="API definition">
          {e.definitionUnavailable ? (
            <Notice tone="error" text={`The definition could not be read: ${e.definitionUnavailable}`} />
          ) : (
            <ApiDefinition entityRef={e.ref} type={e.type} />
          )}
        </Section>
      ) : null}
    </>
  );
}
