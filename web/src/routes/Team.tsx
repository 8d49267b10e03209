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

export default function Team() {
  const { namespace = "default", name = "" } = useParams();
  const ref = pageRef("group", namespace, name);
  const page = useQuery<any>(document("TeamPage"), { variables: { ref } });
  const workloads = useQuery<any>(document("TeamWorkloads"), { variables: { ref } });
  if (page.error && !page.data) {
    return (
      <p className="atrium-error" role="alert">
        Could not load {ref}: {page.error.message}
      </p>
    );
  }
  const g = page.data?.entity;
  if (page.loading && !g) return <p className="atrium-loading" role="status">Loading…</p>;
  if (!g) {
    return (
      <>
        <h1 className="atrium-title">Not found</h1>
        <p>No team {ref} is in the catalog.</p>
      </>
    );
  }
  const owned = page.data.owned;
  const apps = workloads.data?.pinApps;
  return (
    <>
      <h1 className="atrium-title">{g.title || g.profile?.displayName || g.name}</h1>
      <p className="atrium-muted">
        Team{g.type ? ` · ${g.type}` : ""} · {g.ref}
        {g.profile?.email ? ` · ${g.profile.email}` : ""}
      </p>
      {g.description ? <p>{g.description}</p> : null}
      <EntityList id="members" heading="Members" items={g.members} empty="No members." />
      {g.parent ? (
        <Panel id="parent" heading="Parent team">
          <p>
            <EntityLink entity={g.parent} />
          </p>
        </Panel>
      ) : null}
      {g.children?.length ? (
        <EntityList id="children" heading="Teams within" items={g.children} empty="" />
      ) : null}
      <EntityList
        id="owns"
        heading={`Owns (${owned.totalCount})`}
        items={owned.nodes}
        empty="Owns nothing."
        showKind
      />
      <Workloads
        items={apps?.nodes}
        unavailable={unavailableClusters(apps?.clusterErrors)}
        error={workloads.error}
        loading={workloads.loading && !apps}
      />
      <PluginPanels page="team" pageRef={ref} />
    </>
  );
}
