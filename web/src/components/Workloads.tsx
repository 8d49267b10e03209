import { Link } from "react-router";
import { workloadUrl } from "../urls";
import { Panel } from "./Panel";
import type { ErrorLike } from "@apollo/client";

export interface WorkloadSummary {
  id: string;
  cluster: string;
  namespace: string;
  name: string;
  readyReplicas: number;
  desiredReplicas: number;
}

interface Props {
  items: WorkloadSummary[] | null | undefined;
  // Clusters that cannot answer, by name: their workloads are marked, not the page.
  unavailable: Record<string, string>;
  // Known clusters; an empty list means none is configured. Null: not asked.
  clusters?: string[] | null;
  error?: ErrorLike | null;
  loading?: boolean;
}

export function Workloads({ items, unavailable, clusters, error, loading }: Props) {
  return (
    <Panel id="workloads" heading="Workloads" error={error} loading={loading}>
      {clusters && clusters.length === 0 ? (
        <p className="atrium-muted">No Kubernetes cluster is configured.</p>
      ) : items && items.length ? (
        <ul className="atrium-list">
          {items.map((w) => (
            <li key={w.id}>
              <Link to={workloadUrl(w)}>{w.name}</Link>{" "}
              <span className="atrium-muted">
                {w.cluster}/{w.namespace}
              </span>{" "}
              {w.readyReplicas}/{w.desiredReplicas} ready
              {unavailable[w.cluster] ? (
                <>
                  {" "}
                  <strong className="atrium-error">
                    cluster unavailable: {unavailable[w.cluster]}
                  </strong>
                </>
              ) : null}
            </li>
          ))}
        </ul>
      ) : (
        <p className="atrium-muted">No workloads.</p>
      )}
      {Object.entries(unavailable)
        .filter(([name]) => !items?.some((w) => w.cluster === name))
        .map(([name, message]) => (
          <p key={name} className="atrium-error" role="alert">
            Cluster {name} cannot answer: {message}
          </p>
        ))}
    </Panel>
  );
}

export function unavailableClusters(
  items: ({ name: string; healthy: boolean; lastError?: string | null } | { cluster: string; message: string })[] | null | undefined,
): Record<string, string> {
  const found: Record<string, string> = {};
  for (const item of items ?? []) {
    if ("healthy" in item) {
      if (!item.healthy) found[item.name] = item.lastError || "not answering";
    } else {
      found[item.cluster] = item.message || "not answering";
    }
  }
  return found;
}
