/* eslint-disable @typescript-eslint/no-explicit-any */
// The deployments plugin's panels: a component's pipeline and history (promote and roll back
// for its owners, followed live while a deploy is in flight), and a team's DORA figures. The
// server renders the same markup (plugins/deployments/templates/), so nothing moves when React
// takes over.
import { useApolloClient, useMutation, useQuery, useSubscription } from "@apollo/client/react";
import { useState } from "react";
import { Panel } from "../../components/Panel";
import { document } from "../../documents";
import type { PanelProps, PluginPanel } from "../../plugins";

const IN_FLIGHT = new Set(["PENDING", "IN_PROGRESS"]);

// "2026-11-20T15:20:53.1+00:00" → "2026-11-20 15:20" (UTC), as the server's template writes it.
export function when(iso: string | null | undefined): string {
  return iso ? iso.slice(0, 16).replace("T", " ") : "";
}

export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return "no data";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} days`;
}

function state(s: string): string {
  return s.toLowerCase().replace("_", " ");
}

function Deployments({ pageRef }: PanelProps) {
  const variables = { ref: pageRef };
  const query = document("EntityDeployments");
  const client = useApolloClient();
  const { data, error, loading } = useQuery<any>(query, { variables });
  const [acted, setActed] = useState<{ ok: boolean; text: string } | null>(null);
  const component = data?.entity;
  const stages: any[] = component?.pipeline?.stages ?? [];
  const deploys: any[] = component?.deployments?.edges.map((e: any) => e.node) ?? [];
  const inFlight = stages.some((s) => s.latest && IN_FLIGHT.has(s.latest.state));

  // A fresh answer, past the browser's HTTP cache too: what waits to be promoted may change.
  const refresh = () =>
    client.query({
      query,
      variables,
      fetchPolicy: "network-only",
      context: { fetchOptions: { cache: "no-cache" } },
    });

  useSubscription<any>(document("ComponentDeploys"), {
    variables: { component: pageRef },
    skip: !inFlight,
    onData: ({ data: message }) => {
      const deploy = message.data?.componentDeploys;
      if (!deploy) return;
      client.cache.updateQuery<any>({ query, variables }, (old) => withDeploy(old, deploy));
      if (!IN_FLIGHT.has(deploy.state)) void refresh();
    },
  });

  const [promote, promoting] = useMutation<any>(document("PromoteRelease"));
  const [rollback, rollingBack] = useMutation<any>(document("RollbackStage"));
  const busy = promoting.loading || rollingBack.loading;

  async function act(run: () => Promise<any>, what: string) {
    setActed(null);
    try {
      const result = await run();
      const deploy = result.data && Object.values(result.data)[0];
      if (deploy) {
        client.cache.updateQuery<any>({ query, variables }, (old) => withDeploy(old, deploy));
      }
      setActed({ ok: true, text: `${what}: ${state((deploy as any)?.state ?? "started")}` });
    } catch (e) {
      setActed({ ok: false, text: `${what} refused: ${(e as Error).message}` });
    }
  }

  return (
    <Panel id="deployments" heading="Deployments" error={error} loading={loading && !data}>
      {stages.length ? (
        <ol className="atrium-stages">
          {stages.map((s, index) => (
            <li key={s.name} className="atrium-stage">
              <h3>
                {s.name}
                {s.production ? <span className="atrium-muted"> · production</span> : null}
              </h3>
              <p>{s.current ? s.current.release.version : "nothing deployed"}</p>
              {s.latest ? (
                <p className="atrium-muted">
                  <span className={`atrium-state atrium-state-${s.latest.state.toLowerCase()}`}>
                    {state(s.latest.state)}
                  </span>{" "}
                  {s.latest.release.version} {when(s.latest.startedAt)}
                </p>
              ) : null}
              {s.waiting.length ? (
                <p className="atrium-muted">
                  waiting: {s.waiting.map((r: any) => r.version).join(", ")}
                </p>
              ) : null}
              {component.viewerCanDeploy ? (
                <p className="atrium-actions">
                  {index > 0 && s.waiting.length ? (
                    <button
                      type="button"
                      className="atrium-button"
                      disabled={busy}
                      onClick={() =>
                        act(
                          () =>
                            promote({
                              variables: {
                                component: pageRef,
                                release: s.waiting[0].version,
                                stage: s.name,
                              },
                            }),
                          `Promote ${s.waiting[0].version} to ${s.name}`,
                        )
                      }
                    >
                      Promote {s.waiting[0].version}
                    </button>
                  ) : null}
                  {s.current ? (
                    <button
                      type="button"
                      className="atrium-button"
                      disabled={busy}
                      onClick={() =>
                        act(
                          () => rollback({ variables: { component: pageRef, stage: s.name } }),
                          `Roll back ${s.name}`,
                        )
                      }
                    >
                      Roll back
                    </button>
                  ) : null}
                </p>
              ) : null}
            </li>
          ))}
        </ol>
      ) : (
        <p className="atrium-muted">No pipeline and no deploys yet.</p>
      )}
      {acted ? (
        <p className={acted.ok ? "atrium-muted" : "atrium-error"} role={acted.ok ? "status" : "alert"}>
          {acted.text}
        </p>
      ) : null}
      {deploys.length ? (
        <table className="atrium-table">
          <caption>Last deploys ({component.deployments.totalCount} in all)</caption>
          <thead>
            <tr>
              <th scope="col">Started</th>
              <th scope="col">Stage</th>
              <th scope="col">Release</th>
              <th scope="col">State</th>
              <th scope="col">By</th>
            </tr>
          </thead>
          <tbody>
            {deploys.map((d) => (
              <tr key={d.id}>
                <td>{when(d.startedAt)}</td>
                <td>{d.stage}</td>
                <td>
                  {d.release.version}
                  {d.isRollback ? <span className="atrium-muted"> (rollback)</span> : null}
                </td>
                <td>
                  {d.url ? (
                    <a href={d.url} rel="noopener">
                      {state(d.state)}
                    </a>
                  ) : (
                    state(d.state)
                  )}
                </td>
                <td>{d.actor}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </Panel>
  );
}

// A deploy merged into the panel's answer: its row replaced or added first, its stage's
// latest (and current, once it succeeded) moved to it.
function withDeploy(old: any, deploy: any): any {
  if (!old?.entity?.deployments) return old;
  const entity = old.entity;
  const edges = entity.deployments.edges;
  const known = edges.some((e: any) => e.node.id === deploy.id);
  const merged = known
    ? edges.map((e: any) => (e.node.id === deploy.id ? { ...e, node: { ...e.node, ...deploy } } : e))
    : [{ __typename: "DeployEdge", node: deploy }, ...edges].slice(0, 20);
  const stages = entity.pipeline.stages.map((s: any) => {
    if (s.name !== deploy.stage) return s;
    const newer = !s.latest || s.latest.id === deploy.id || deploy.startedAt >= s.latest.startedAt;
    return {
      ...s,
      latest: newer ? deploy : s.latest,
      current: deploy.state === "SUCCEEDED" && newer ? deploy : s.current,
    };
  });
  return {
    ...old,
    entity: {
      ...entity,
      pipeline: { ...entity.pipeline, stages },
      deployments: {
        ...entity.deployments,
        totalCount: entity.deployments.totalCount + (known ? 0 : 1),
        edges: merged,
      },
    },
  };
}

function TeamDora({ pageRef }: PanelProps) {
  const { data, error, loading } = useQuery<any>(document("TeamDora"), {
    variables: { ref: pageRef },
  });
  const dora = data?.entity?.dora;
  return (
    <Panel id="dora" heading="Delivery (last 90 days)" error={error} loading={loading && !data}>
      {dora ? (
        <dl className="atrium-facts">
          <dt>Deploys to production</dt>
          <dd>
            {dora.deploys} ({dora.deploysPerDay.toFixed(2)} a day)
          </dd>
          <dt>Lead time for changes</dt>
          <dd>{duration(dora.leadTimeSeconds)}</dd>
          <dt>Change failure rate</dt>
          <dd>
            {dora.changeFailureRate === null
              ? "no data"
              : `${(dora.changeFailureRate * 100).toFixed(1)}%`}
          </dd>
          <dt>Time to restore</dt>
          <dd>{duration(dora.timeToRestoreSeconds)}</dd>
        </dl>
      ) : null}
    </Panel>
  );
}

export const panels: PluginPanel[] = [
  { page: "entity", kinds: ["component"], component: Deployments },
  { page: "team", component: TeamDora },
];
