/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import type { ReactNode } from "react";
import { useParams } from "react-router";
import { ActionOutcome, ActionStatus } from "../components/Confirm";
import { EntityLink } from "../components/EntityLink";
import { PageHead } from "../components/PageHead";
import { Empty, Loading, Notice, Section } from "../components/Section";
import { Tabs } from "../components/Tabs";
import { document } from "../documents";
import { Figure, Row, Small, Span, Status, Strong, Table, TBody, Td, Th, THead } from "../kit";
import { usePageMeta } from "../pageMeta";
import {
  clusterErrors,
  imageVersion,
  pageSections,
  podStatus,
  scalerBounds,
  workloadCrumbs,
} from "../present";
import { PluginPanels, panelSections } from "../plugins";
import { Missing } from "./Missing";
import { WorkloadActions } from "./workload/Actions";

// A PinApp's page (ssr/templates/workload.html).
export default function Workload() {
  const { cluster = "", namespace = "", name = "" } = useParams();
  const key = { cluster, namespace, name };
  const { data, error, loading } = useQuery<any>(document("WorkloadPage"), { variables: key });
  const app = data?.pinApp;
  usePageMeta(
    data && !app ? "Not found" : `${name} (workload)`,
    `The workload ${name} in ${cluster}/${namespace}: its pods, events and logs.`,
  );
  if (error && !data) return <Notice tone="error" text={`Could not load ${cluster}/${namespace}/${name}: ${error.message}`} />;
  if (loading && !data) return <Loading />;
  if (!app) return <Missing status={404} />;
  const down = clusterErrors(data.clusters);
  const facts: [string, ReactNode][] = [];
  if (app.entity) facts.push(["Component", <EntityLink entity={app.entity} />]);
  facts.push(["Cluster", <Span>{app.cluster}</Span>]);
  facts.push(["Namespace", <Span>{app.namespace}</Span>]);
  facts.push(["Image", <Span>{app.image || "—"}</Span>]);
  const sections = pageSections("workload", null, [], panelSections("workload"));
  return (
    <ActionStatus>
      <PageHead
        title={app.name}
        crumbs={workloadCrumbs(app)}
        badges={[["PinApp", "neutral"]]}
        facts={facts}
        actions={app.viewerCanManage ? <WorkloadActions app={app} /> : null}
      />
      {down[app.cluster] ? (
        <Notice tone="error" text={`Cluster ${app.cluster} cannot answer (${down[app.cluster]}): what is shown may be out of date.`} />
      ) : null}
      <ActionOutcome />
      <Tabs sections={sections} />
      <Section id="overview" title="Overview">
        <div className="atrium-figures">
          <div className="atrium-card">
            <Figure title="Ready" value={`${app.readyReplicas} of ${app.desiredReplicas}`} />
          </div>
          <div className="atrium-card">
            <Figure title="Version" value={imageVersion(app.image)} />
          </div>
          <div className="atrium-card">
            <Figure title="Rollout" value={`${Math.round(app.rolloutProgress * 100)}%`} />
          </div>
          <div className="atrium-card">
            <Figure title="Replicas" value={scalerBounds(app)} />
          </div>
        </div>
        {app.conditions.length ? (
          <ul className="atrium-list">
            {app.conditions.map((c: any) => (
              <li key={c.type}>
                <Status type={c.status === "True" ? "ok" : "warning"} title={c.type} />
                <Small>{`${c.reason || ""}${c.message ? `: ${c.message}` : ""}`}</Small>
              </li>
            ))}
          </ul>
        ) : null}
      </Section>
      <Section id="pods" title="Pods">
        {app.pods.length ? (
          <Table label="Pods">
            <THead>
              <Row>
                <Th>Pod</Th>
                <Th>State</Th>
                <Th>Restarts</Th>
                <Th>Node</Th>
              </Row>
            </THead>
            <TBody>
              {app.pods.map((p: any) => {
                const [podType, podTitle] = podStatus(p);
                return (
                  <Row key={p.name}>
                    <Td>
                      <Span>{p.name}</Span>
                    </Td>
                    <Td>
                      <Status type={podType} title={podTitle} />
                    </Td>
                    <Td>
                      <Span>{String(p.restarts)}</Span>
                    </Td>
                    <Td>
                      <Span>{p.node || "—"}</Span>
                    </Td>
                  </Row>
                );
              })}
            </TBody>
          </Table>
        ) : (
          <Empty text="No pods." />
        )}
      </Section>
      <Section id="events" title="Events">
        {app.events.length ? (
          <ul className="atrium-list">
            {app.events.map((e: any, i: number) => (
              <li key={i}>
                <div className="atrium-cell">
                  {e.type === "Warning" ? <Status type="warning" title={e.reason} /> : <Strong>{e.reason}</Strong>}
                  <Small>{`${e.message}${e.count > 1 ? ` (×${e.count})` : ""}`}</Small>
                </div>
              </li>
            ))}
          </ul>
        ) : (
          <Empty text="No recent events." />
        )}
      </Section>
      <PluginPanels page="workload" pageRef={`${cluster}/${namespace}/${name}`} workload={key} />
    </ActionStatus>
  );
}
