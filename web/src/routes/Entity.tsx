/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import { useParams } from "react-router";
import { EntityLink } from "../components/EntityLink";
import { EntityList } from "../components/EntityList";
import { Panel } from "../components/Panel";
import { Workloads, unavailableClusters } from "../components/Workloads";
import { document } from "../documents";
import { PluginPanels } from "../plugins";
import { pageRef } from "../urls";

export default function Entity() {
  const { namespace = "", kind = "", name = "" } = useParams();
  const ref = pageRef(kind, namespace, name);
  const page = useQuery<any>(document("EntityPage"), { variables: { ref } });
  const isComponent = kind.toLowerCase() === "component";
  const workloads = useQuery<any>(document("EntityWorkloads"), {
    variables: { ref },
    skip: !isComponent,
  });
  if (page.error && !page.data) {
    return (
      <p className="atrium-error" role="alert">
        Could not load {ref}: {page.error.message}
      </p>
    );
  }
  const e = page.data?.entity;
  if (page.loading && !e) return <p className="atrium-loading" role="status">Loading…</p>;
  if (!e) {
    return (
      <>
        <h1 className="atrium-title">Not found</h1>
        <p>No entity {ref} is in the catalog.</p>
      </>
    );
  }
  const w = workloads.data;
  return (
    <>
      {/* elementtiming: when the name is painted (Element Timing API; make bench reads it). */}
      <h1 className="atrium-title" {...{ elementtiming: "entity-name" }}>
        {e.title || e.name}
      </h1>
      <p className="atrium-muted">
        {e.kind}
        {e.type ? ` · ${e.type}` : ""}
        {e.lifecycle ? ` · ${e.lifecycle}` : ""} · {e.ref}
      </p>
      {e.description ? <p>{e.description}</p> : null}
      {e.tags?.length ? (
        <p>
          {e.tags.map((tag: string) => (
            <span key={tag} className="atrium-tag">
              {tag}
            </span>
          ))}
        </p>
      ) : null}
      {e.owner || e.ownerRef ? (
        <Panel id="owner" heading="Owner">
          {e.owner ? (
            <>
              <p>
                <EntityLink entity={e.owner} />
              </p>
              {e.owner.members?.length ? (
                <ul className="atrium-list">
                  {e.owner.members.map((m: any) => (
                    <li key={m.ref}>
                      <EntityLink entity={m} />
                      {m.profile?.email ? (
                        <span className="atrium-muted"> {m.profile.email}</span>
                      ) : null}
                    </li>
                  ))}
                </ul>
              ) : null}
            </>
          ) : (
            <p>
              {e.ownerRef} <span className="atrium-muted">(not in the catalog)</span>
            </p>
          )}
        </Panel>
      ) : null}
      {e.system ? (
        <Panel id="system" heading="System">
          <p>
            <EntityLink entity={e.system} />
            {e.system.domain ? (
              <>
                {" in "}
                <EntityLink entity={e.system.domain} />
              </>
            ) : null}
          </p>
        </Panel>
      ) : null}
      {lists.map(([field, id, heading, empty]) =>
        e[field] !== undefined ? (
          <EntityList key={id} id={id} heading={heading} items={e[field]} empty={empty} />
        ) : null,
      )}
      {e.links?.length ? (
        <Panel id="links" heading="Links">
          <ul className="atrium-list">
            {e.links.map((link: any) => (
              <li key={link.url}>
                <a href={link.url} rel="noopener">
                  {link.title || link.url}
                </a>
              </li>
            ))}
          </ul>
        </Panel>
      ) : null}
      {isComponent ? (
        <Workloads
          items={w?.entity?.workloads}
          clusters={w ? w.clusters.map((c: any) => c.name) : null}
          unavailable={unavailableClusters(w?.clusters)}
          error={workloads.error}
          loading={workloads.loading && !w}
        />
      ) : null}
      <PluginPanels page="entity" kind={kind.toLowerCase()} pageRef={ref} />
    </>
  );
}

// The entity's lists, in the order the server's template shows them.
const lists: [string, string, string, string][] = [
  ["dependencies", "dependencies", "Dependencies", "No dependencies."],
  ["dependents", "dependents", "Dependents", "Nothing depends on it."],
  ["providesApis", "provides", "Provided APIs", "Provides no API."],
  ["consumesApis", "consumes", "Consumed APIs", "Consumes no API."],
  ["providers", "providers", "Providers", "No provider."],
  ["consumers", "consumers", "Consumers", "No consumer."],
  ["components", "components", "Components", "No components."],
  ["apis", "apis", "APIs", "No APIs."],
  ["resources", "resources", "Resources", "No resources."],
  ["systems", "systems", "Systems", "No systems."],
  ["memberOf", "memberof", "Teams", "In no team."],
];
