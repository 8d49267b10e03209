/* eslint-disable @typescript-eslint/no-explicit-any */
// The deployments plugin's panels: a component's pipeline and history (promote and roll back for
// its owners, each confirmed, followed live while a deploy is in flight), and a team's delivery
// figures. The server renders the same markup (plugins/deployments/templates/), so nothing moves
// when React takes over.
import { useApolloClient, useMutation, useQuery, useSubscription } from "@apollo/client/react";
import { ActionOutcome, ActionStatus, ConfirmAction, type Outcome } from "../../components/Confirm";
import { Person } from "../../components/EntityLink";
import { Empty, Loading, Notice, Section } from "../../components/Section";
import { document } from "../../documents";
import {
  Badge,
  CardTitle,
  ExternalLink,
  Figure,
  Para,
  Row,
  Small,
  Span,
  Status,
  Table,
  TBody,
  Td,
  Th,
  THead,
} from "../../kit";
import type { PanelProps, PluginPanel } from "../../plugins";
import { deployStatus, duration, stateWord, when } from "./words";

const IN_FLIGHT = new Set(["PENDING", "IN_PROGRESS"]);

function Deployments({ pageRef }: PanelProps) {
  return (
    <ActionStatus>
      <DeploymentsSection pageRef={pageRef} />
    </ActionStatus>
  );
}

function DeploymentsSection({ pageRef }: PanelProps) {
  const variables = { ref: pageRef };
  const query = document("EntityDeployments");
  const client = useApolloClient();
  const { data, error, loading } = useQuery<any>(query, { variables });
  const component = data?.entity;
  const stages: any[] = component?.pipeline?.stages ?? [];
  const deploys: any[] = component?.deployments?.edges.map((e: any) => e.node) ?? [];
  const inFlight = stages.some((s) => s.latest && IN_FLIGHT.has(s.latest.state));

  // A fresh answer, past the browser's HTTP cache too: what waits to be promoted may change.
  const refresh = () =>
    client.query({ query, variables, fetchPolicy: "network-only", context: { fetchOptions: { cache: "no-cache" } } });

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

  // What a deploy started here says now (the row and the status line agree).
  const followed = (id: string, what: string) => () => {
    const found = client.cache.readQuery<any>({ query, variables });
    const deploy = found?.entity?.deployments?.edges.find((e: any) => e.node.id === id)?.node;
    return deploy ? `${what}: ${stateWord(deploy.state)}.` : null;
  };
  const started = (deploy: any, what: string): Outcome => {
    if (deploy) client.cache.updateQuery<any>({ query, variables }, (old) => withDeploy(old, deploy));
    return { ok: true, text: `${what}: ${stateWord(deploy?.state ?? "PENDING")}.`, follow: deploy ? followed(deploy.id, what) : undefined };
  };

  if (!data) {
    return (
      <Section id="deployments" title="Deployments">
        {error ? <Notice tone="error" text={`Could not load the deployments: ${error.message}`} /> : loading ? <Loading /> : null}
      </Section>
    );
  }
  return (
    <Section id="deployments" title="Deployments">
      {stages.length ? (
        <ol className="atrium-cards atrium-stages">
          {stages.map((s, index) => (
            <li key={s.name} className="atrium-card">
              <div className="atrium-stage-head">
                <CardTitle>{s.name}</CardTitle>
                {s.production ? <Badge text="production" type="info" /> : null}
              </div>
              <Figure title="Runs" value={s.current ? s.current.release.version : "nothing yet"} />
              {s.latest ? (
                <div className="atrium-cell">
                  <Status type={deployStatus(s.latest.state)} title={`${stateWord(s.latest.state)}: ${s.latest.release.version}`} />
                  <Small>{when(s.latest.startedAt)}</Small>
                </div>
              ) : null}
              {s.waiting.length ? <Small>{`Waiting: ${s.waiting.map((r: any) => r.version).join(", ")}`}</Small> : null}
              {component.viewerCanDeploy ? (
                s.deployable ? (
                  <StageActions
                    stage={s}
                    first={index === 0}
                    component={pageRef}
                    onStarted={started}
                  />
                ) : (
                  <Small>{`Atrium cannot deploy here: ${s.notDeployableReason ?? "no way to deploy is configured"}.`}</Small>
                )
              ) : null}
            </li>
          ))}
        </ol>
      ) : (
        <Empty text="No pipeline and no deploys yet." />
      )}
      <ActionOutcome />
      {deploys.length ? (
        <div className="atrium-deploys">
          <Para tone="subtle">{`Last deploys (${component.deployments.totalCount} in all)`}</Para>
          <Table label="Last deploys">
            <THead>
              <Row>
                <Th>Started</Th>
                <Th>Stage</Th>
                <Th>Release</Th>
                <Th>State</Th>
                <Th>By</Th>
              </Row>
            </THead>
            <TBody>
              {deploys.map((d) => (
                <Row key={d.id}>
                  <Td>
                    <Span>{when(d.startedAt)}</Span>
                  </Td>
                  <Td>
                    <Span>{d.stage}</Span>
                  </Td>
                  <Td>
                    <div className="atrium-cell">
                      <Span>{d.release.version}</Span>
                      {d.isRollback ? <Small>rollback</Small> : null}
                    </div>
                  </Td>
                  <Td>
                    {d.url ? (
                      <ExternalLink href={d.url}>{stateWord(d.state)}</ExternalLink>
                    ) : (
                      <Status type={deployStatus(d.state)} title={stateWord(d.state)} />
                    )}
                  </Td>
                  <Td>{d.actorUser ? <Person entity={d.actorUser} /> : <Span>{d.actor ?? "—"}</Span>}</Td>
                </Row>
              ))}
            </TBody>
          </Table>
        </div>
      ) : null}
    </Section>
  );
}

// Promote what waits, or roll back to what ran before: each confirmed, naming the versions.
function StageActions({
  stage,
  first,
  component,
  onStarted,
}: {
  stage: any;
  first: boolean;
  component: string;
  onStarted: (deploy: any, what: string) => Outcome;
}) {
  const [promote] = useMutation<any>(document("PromoteRelease"));
  const [rollback] = useMutation<any>(document("RollbackStage"));
  const current = stage.current?.release.version ?? "nothing";
  const next = stage.waiting[0]?.version;
  const back = stage.rollbackTo?.version;
  if (!(next && !first) && !back) return null;
  return (
    <div className="atrium-actions">
      {next && !first ? (
        <ConfirmAction
          label={`Promote ${next}…`}
          title={`Promote ${next} to ${stage.name}?`}
          confirm={`Promote ${next}`}
          pending="Promoting…"
          run={async () => {
            const result = await promote({ variables: { component, release: next, stage: stage.name } });
            return onStarted(result.data?.promoteRelease, `Promote ${next} to ${stage.name}`);
          }}
        >
          <Para>{`${stage.name} goes from ${current} to ${next}.`}</Para>
        </ConfirmAction>
      ) : null}
      {back ? (
        <ConfirmAction
          label={`Roll back to ${back}…`}
          title={`Roll back ${stage.name}?`}
          confirm={`Roll back to ${back}`}
          pending="Rolling back…"
          run={async () => {
            const result = await rollback({ variables: { component, stage: stage.name, toRelease: back } });
            return onStarted(result.data?.rollbackStage, `Roll back ${stage.name} to ${back}`);
          }}
        >
          <Para>{`${stage.name} goes from ${current} back to ${back}.`}</Para>
        </ConfirmAction>
      ) : null}
    </div>
  );
}

// A deploy merged into the panel's answer: its row replaced or added first, its stage's latest
// (and current, once it succeeded) moved to it.
function withDeploy(old: any, deploy: any): any {
  if (!old?.entity?.deployments) return old;
  const entity = old.entity;
  const edges = entity.deployments.edges;
  const known = edges.some((e: any) => e.node.id === deploy.id);
  const merged = known
    ? edges.map((e: any) => (e.node.id === deploy.id ? { ...e, node: { ...e.node, ...deploy } } : e))
    : [{ __typename: "DeployEdge", node: { actorUser: null, ...deploy } }, ...edges].slice(0, 20);
  const stages = entity.pipeline.stages.map((s: any) => {
    if (s.name !== deploy.stage) return s;
    const newer = !s.latest || s.latest.id === deploy.id || deploy.startedAt >= s.latest.startedAt;
    return {
      ...s,
      latest: newer ? { ...s.latest, ...deploy } : s.latest,
      current: deploy.state === "SUCCEEDED" && newer ? { ...s.current, ...deploy } : s.current,
    };
  });
  return {
    ...old,
    entity: {
      ...entity,
      pipeline: { ...entity.pipeline, stages },
      deployments: { ...entity.deployments, totalCount: entity.deployments.totalCount + (known ? 0 : 1), edges: merged },
    },
  };
}

function TeamDora({ pageRef }: PanelProps) {
  const { data, error, loading } = useQuery<any>(document("TeamDora"), { variables: { ref: pageRef } });
  const dora = data?.entity?.dora;
  return (
    <Section id="delivery" title="Delivery (last 90 days)">
      {error && !data ? <Notice tone="error" text={`Could not load the figures: ${error.message}`} /> : null}
      {loading && !data ? <Loading /> : null}
      {dora ? (
        <div className="atrium-figures">
          <div className="atrium-card">
            <Figure title="Deploys to production" value={`${dora.deploys} (${dora.deploysPerDay.toFixed(2)} a day)`} />
          </div>
          <div className="atrium-card">
            <Figure title="Lead time for changes" value={duration(dora.leadTimeSeconds)} />
          </div>
          <div className="atrium-card">
            <Figure
              title="Change failure rate"
              value={dora.changeFailureRate === null ? "no data" : `${(dora.changeFailureRate * 100).toFixed(1)}%`}
            />
          </div>
          <div className="atrium-card">
            <Figure title="Time to restore" value={duration(dora.timeToRestoreSeconds)} />
          </div>
        </div>
      ) : null}
    </Section>
  );
}

export const panels: PluginPanel[] = [
  { page: "entity", kinds: ["component"], requires: "EntityDeployments", section: ["deployments", "Deployments"], component: Deployments },
  { page: "team", requires: "TeamDora", section: ["delivery", "Delivery"], component: TeamDora },
];

