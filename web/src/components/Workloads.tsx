/* eslint-disable @typescript-eslint/no-explicit-any */
import { AppLink, Row, Small, Span, Status, Table, TBody, Td, Th, THead } from "../kit";
import { clusterErrors as clusterErrorsOf, imageVersion, workloadStatus, workloadUrl } from "../present";
import { Empty, Notice, Section } from "./Section";

interface Props {
  // null: not asked yet (loading); false: no cluster is configured.
  configured: boolean | null;
  items: any[];
  // Clusters that cannot answer, by name: their workloads are marked, not the page.
  errors: Record<string, string>;
}

// A component's or a team's workloads (ssr/templates/_workloads.html).
export function Workloads({ configured, items, errors }: Props) {
  return (
    <Section id="workloads" title="Workloads & logs">
      {configured === false ? (
        <Empty text="No Kubernetes cluster is configured: Atrium reads workloads from the clusters of ATRIUM_KUBECONFIG." />
      ) : items.length ? (
        <div className="atrium-workloads">
          <Table label="Workloads">
            <THead>
              <Row>
                <Th>Workload</Th>
                <Th>Ready</Th>
                <Th>Version</Th>
                <Th>Cluster</Th>
              </Row>
            </THead>
            <TBody>
              {items.map((w) => {
                const [type, title] = workloadStatus(w, errors);
                return (
                  <Row key={w.id}>
                    <Td>
                      <div className="atrium-cell">
                        <AppLink href={workloadUrl(w)} strong>
                          {w.name}
                        </AppLink>
                        <Small>{w.namespace}</Small>
                      </div>
                    </Td>
                    <Td>
                      <Status type={type} title={title} />
                    </Td>
                    <Td>
                      <Span>{imageVersion(w.image)}</Span>
                    </Td>
                    <Td>
                      <Span>{w.cluster}</Span>
                    </Td>
                  </Row>
                );
              })}
            </TBody>
          </Table>
        </div>
      ) : (
        <Empty text="No workloads run it." />
      )}
      {Object.entries(errors)
        .filter(([name]) => !items.some((w) => w.cluster === name))
        .map(([name, message]) => (
          <Notice key={name} tone="error" text={`Cluster ${name} cannot answer: ${message}`} />
        ))}
    </Section>
  );
}

export function workloadsOf(data: Record<string, any>): Props {
  if ("EntityWorkloads" in data) {
    const answer = data.EntityWorkloads ?? {};
    const clusters = answer.clusters ?? [];
    return { configured: clusters.length > 0, items: answer.entity?.workloads ?? [], errors: clusterErrorsOf(clusters) };
  }
  const apps = data.TeamWorkloads?.pinApps ?? {};
  return { configured: null, items: apps.nodes ?? [], errors: clusterErrorsOf(apps.clusterErrors) };
}
