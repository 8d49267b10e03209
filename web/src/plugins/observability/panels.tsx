/* eslint-disable @typescript-eslint/no-explicit-any */
// The observability plugin's panels: a component's metrics (rate, errors, latency over 1 h,
// 24 h or 7 d) and alerts (silence and expire for its owners, each confirmed), a team's alerts
// and its services' error ratios side by side, a PinApp's CPU and memory against its requests
// and limits, its alerts and its pods' merged log, followed live. The server renders the
// figures and alerts with the same markup (plugins/observability/templates/); charts draw once
// their chunk has loaded, in boxes of the height the server reserved.
import { useApolloClient, useMutation, useQuery, useSubscription } from "@apollo/client/react";
import { SelectList, TextField } from "gestalt";
import { lazy, Suspense, useMemo, useState } from "react";
import { ActionOutcome, ActionStatus, ConfirmAction } from "../../components/Confirm";
import { Empty, Loading, Notice, Section } from "../../components/Section";
import { document } from "../../documents";
import { Badge, ExternalLink, Figure, Para, RANGES, RangeChoice, Small, Span, Status } from "../../kit";
import { page as pageData } from "../../page";
import type { PanelProps, PluginPanel } from "../../plugins";
import type { Line } from "./Chart";
import { bytes, cores, latest, rate, ratio, seconds, severityBadge, since } from "./words";

const Chart = lazy(() => import("./Chart"));
// A ratio as a percentage, to the hundredth where it needs it (an axis's ticks 0.3% and 0.35%
// apart), without trailing zeros.
const percent = (v: number) => `${+(v * 100).toFixed(2)}%`;
const CHART_HEIGHT = 180;

function ChartBox(props: { title: string; lines: Line[]; format: (v: number) => string; bounds?: { label: string; value: number }[] }) {
  return (
    <figure className="atrium-figure">
      <Suspense fallback={<div className="atrium-chart" />}>
        <Chart {...props} height={CHART_HEIGHT} />
      </Suspense>
    </figure>
  );
}

// A backend that could not answer (or is not configured) says so, and how to connect it: the
// answer's error, or, for an answer the page came with, what the server said of it.
function Unavailable({ error, operation }: { error: any; operation: string }) {
  const message = error?.message || pageData.unavailable?.[operation];
  return <Notice text={message ? `Unavailable: ${message}` : "Unavailable."} />;
}

function Metrics({ pageRef }: PanelProps) {
  const [range, setRange] = useState(0);
  const { data, error, loading } = useQuery<any>(document("EntityMetrics"), {
    variables: { ref: pageRef, since: RANGES[range][1] },
    errorPolicy: "all",
  });
  const series: any[] = data?.entity?.metrics ?? [];
  const named = (name: string) => series.filter((s) => s.name === name);
  const lines = (name: string, label?: string): Line[] => named(name).map((s) => ({ label: label ?? name, points: s.points }));
  const latency = ["latency_p50", "latency_p95", "latency_p99"].flatMap((n) => lines(n, n.replace("latency_", "")));
  const failed = data?.entity && data.entity.metrics === null;
  return (
    <Section id="metrics" title="Metrics" actions={<RangeChoice selected={range} onChange={setRange} />}>
      {loading && !data ? (
        <Loading />
      ) : failed || (!data && error) ? (
        <Unavailable error={error} operation="EntityMetrics" />
      ) : series.length === 0 ? (
        <Empty text="Prometheus has no series for this component." />
      ) : (
        <>
          <div className="atrium-figures">
            <div className="atrium-card">
              <Figure title="Requests" value={rate(latest(named("request_rate")[0]))} />
            </div>
            <div className="atrium-card">
              <Figure title="Errors" value={ratio(latest(named("error_ratio")[0]))} />
            </div>
            <div className="atrium-card">
              <Figure title="Latency p95" value={seconds(latest(named("latency_p95")[0]))} />
            </div>
          </div>
          <div className="atrium-charts">
            <ChartBox title="Requests per second" lines={lines("request_rate", "requests/s")} format={(v) => v.toFixed(1)} />
            <ChartBox title="Error ratio" lines={lines("error_ratio", "errors")} format={percent} />
            <ChartBox title="Latency" lines={latency} format={(v) => `${(v * 1000).toFixed(0)} ms`} />
          </div>
        </>
      )}
    </Section>
  );
}

const DURATIONS: [string, number][] = [
  ["1 hour", 3600],
  ["4 hours", 14400],
  ["1 day", 86400],
];

// Alerts as a list: state, name, severity, what it says, since when, its runbook.
function AlertList({ alerts, actions }: { alerts: any[]; actions?: (alert: any) => React.ReactNode }) {
  return (
    <ul className="atrium-list atrium-alerts">
      {alerts.map((a, i) => (
        <li key={`${a.name}-${i}`}>
          <div className="atrium-cell">
            <div className="atrium-alert-head">
              <Status type={a.state === "ACTIVE" ? "problem" : "canceled"} title={a.state === "ACTIVE" ? a.name : `${a.name} (silenced)`} />
              {a.severity ? <Badge text={a.severity} type={severityBadge(a.severity)} /> : null}
            </div>
            {a.summary ? <Span>{a.summary}</Span> : null}
            <Small>{`Since ${since(a.startsAt)}`}</Small>
            {a.runbookUrl ? <ExternalLink href={a.runbookUrl}>Runbook</ExternalLink> : null}
          </div>
          {actions ? <div className="atrium-actions">{actions(a)}</div> : null}
        </li>
      ))}
    </ul>
  );
}

function Alerts({ pageRef }: PanelProps) {
  return (
    <ActionStatus>
      <AlertsSection pageRef={pageRef} />
    </ActionStatus>
  );
}

function AlertsSection({ pageRef }: PanelProps) {
  const query = document("EntityAlerts");
  const variables = { ref: pageRef };
  const client = useApolloClient();
  const { data, error, loading } = useQuery<any>(query, { variables, errorPolicy: "all" });
  const [create] = useMutation<any>(document("CreateSilence"));
  const [expire] = useMutation<any>(document("ExpireSilence"));
  const [alertName, setAlertName] = useState("");
  const [duration, setDuration] = useState(3600);
  const [comment, setComment] = useState("");
  const component = data?.entity;
  const alerts: any[] = component?.alerts ?? [];
  const owner = Boolean(component?.viewerCanSilence);
  const failed = component && component.alerts === null;
  const name = pageRef.slice(pageRef.lastIndexOf("/") + 1);

  // Alertmanager applies a silence as it evaluates: look again now and a moment later.
  const refresh = () => {
    const again = () => client.query({ query, variables, fetchPolicy: "network-only", context: { fetchOptions: { cache: "no-cache" } } });
    void again();
    setTimeout(() => void again(), 1500);
  };
  const what = alertName ? `${alertName} on ${name}` : `every alert of ${name}`;
  const lasting = DURATIONS.find(([, value]) => value === duration)?.[0] ?? `${duration} s`;
  return (
    <Section
      id="alerts"
      title="Alerts"
      actions={
        owner && !failed ? (
          <ConfirmAction
            label="Silence…"
            title={`Silence ${what}?`}
            confirm="Silence"
            pending="Silencing…"
            ready={Boolean(comment.trim())}
            onOpen={() => setComment("")}
            run={async () => {
              await create({ variables: { ref: pageRef, alertName: alertName || null, durationSeconds: duration, comment: comment.trim() } });
              refresh();
              return { ok: true, text: `Silenced ${what} for ${lasting}.` };
            }}
          >
            <Para>{`Nobody is notified of ${what} for ${lasting}.`}</Para>
            <div className="atrium-fields">
              <SelectList id="silence-alert" label="Alert" value={alertName} onChange={({ value }) => setAlertName(value)}>
                {[["", `Every alert of ${name}`], ...[...new Set(alerts.map((a) => a.name))].map((n) => [n, n])].map(([value, label]) => (
                  <SelectList.Option key={value} value={value} label={label} />
                ))}
              </SelectList>
              <SelectList id="silence-for" label="For" value={String(duration)} onChange={({ value }) => setDuration(Number(value))}>
                {DURATIONS.map(([label, value]) => (
                  <SelectList.Option key={value} value={String(value)} label={label} />
                ))}
              </SelectList>
              <TextField id="silence-why" label="Why" value={comment} onChange={({ value }) => setComment(value)} placeholder="Known issue, fix rolling out" />
            </div>
          </ConfirmAction>
        ) : null
      }
    >
      <ActionOutcome />
      {loading && !data ? (
        <Loading />
      ) : failed || (!data && error) ? (
        <Unavailable error={error} operation="EntityAlerts" />
      ) : alerts.length === 0 ? (
        <Empty text="Nothing is firing." />
      ) : (
        <AlertList
          alerts={alerts}
          actions={
            owner
              ? (a) =>
                  (a.silencedBy ?? []).map((id: string) => (
                    <ConfirmAction
                      key={id}
                      label="Expire silence…"
                      title={`Expire the silence of ${a.name}?`}
                      confirm="Expire"
                      pending="Expiring…"
                      run={async () => {
                        await expire({ variables: { id } });
                        refresh();
                        return { ok: true, text: `The silence of ${a.name} is over: it notifies again.` };
                      }}
                    >
                      <Para>{`${a.name} notifies again from now on.`}</Para>
                    </ConfirmAction>
                  ))
              : undefined
          }
        />
      )}
    </Section>
  );
}

function TeamAlerts({ pageRef }: PanelProps) {
  const { data, error, loading } = useQuery<any>(document("TeamAlerts"), { variables: { ref: pageRef }, errorPolicy: "all" });
  const group = data?.entity;
  const alerts: any[] = group?.alerts ?? [];
  const failed = group && group.alerts === null;
  const active = alerts.filter((a) => a.state === "ACTIVE").length;
  return (
    <Section id="alerts" title="Alerts">
      {loading && !data ? (
        <Loading />
      ) : failed || (!data && error) ? (
        <Unavailable error={error} operation="TeamAlerts" />
      ) : alerts.length === 0 ? (
        <Empty text="Nothing is firing on the team's components." />
      ) : (
        <>
          <Para>{`${active} firing, ${alerts.length - active} silenced`}</Para>
          <AlertList alerts={alerts} />
        </>
      )}
    </Section>
  );
}

function TeamErrorRatios({ pageRef }: PanelProps) {
  const { data, error, loading } = useQuery<any>(document("TeamErrorRatios"), { variables: { ref: pageRef }, errorPolicy: "all" });
  const nodes: any[] = data?.entitiesOwnedBy?.nodes ?? [];
  const lines: Line[] = useMemo(
    () => nodes.flatMap((n: any) => (n.metrics ?? []).map((s: any) => ({ label: n.name, points: s.points }))).slice(0, 12),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [data],
  );
  const failed = nodes.some((n) => n.metrics === null);
  return (
    <Section id="error-ratios" title="Error ratios (24 h)">
      {loading && !data ? (
        <Loading />
      ) : failed || (!data && error) ? (
        <Unavailable error={error} operation="TeamErrorRatios" />
      ) : lines.length === 0 ? (
        <Empty text="Prometheus has no error ratios for the team's services." />
      ) : (
        <ChartBox title="Error ratio by service" lines={lines} format={percent} />
      )}
    </Section>
  );
}

function WorkloadMetrics({ workload }: PanelProps) {
  const [range, setRange] = useState(0);
  const { data, error, loading } = useQuery<any>(document("WorkloadObservability"), {
    variables: { ...workload!, since: RANGES[range][1] },
    errorPolicy: "all",
  });
  const app = data?.pinApp;
  const series: any[] = app?.metrics ?? [];
  const perPod = (name: string): Line[] => series.filter((s) => s.name === name).map((s) => ({ label: s.labels.pod ?? name, points: s.points }));
  const b = app?.resourceBounds ?? {};
  const bounds = (request: number | null, limit: number | null) => [
    ...(request !== null && request !== undefined ? [{ label: "request", value: request }] : []),
    ...(limit !== null && limit !== undefined ? [{ label: "limit", value: limit }] : []),
  ];
  return (
    <Section id="metrics" title="Metrics" actions={<RangeChoice selected={range} onChange={setRange} />}>
      {loading && !data ? (
        <Loading />
      ) : (app && app.metrics === null) || (!data && error) ? (
        <Unavailable error={error} operation="WorkloadObservability" />
      ) : series.length === 0 ? (
        <Empty text="Prometheus has no CPU or memory series for its pods." />
      ) : (
        <div className="atrium-charts">
          <ChartBox title="CPU (cores) per pod" lines={perPod("cpu")} format={cores} bounds={bounds(b.cpuRequest, b.cpuLimit)} />
          <ChartBox title="Memory per pod" lines={perPod("memory")} format={bytes} bounds={bounds(b.memoryRequest, b.memoryLimit)} />
        </div>
      )}
    </Section>
  );
}

// Its alerts: the same answer as the metrics' first range (one request for both).
function WorkloadAlerts({ workload }: PanelProps) {
  const { data, error, loading } = useQuery<any>(document("WorkloadObservability"), {
    variables: { ...workload!, since: RANGES[0][1] },
    errorPolicy: "all",
  });
  const app = data?.pinApp;
  return (
    <Section id="alerts" title="Alerts">
      {loading && !data ? (
        <Loading />
      ) : (app && app.alerts === null) || (!data && error) ? (
        <Unavailable error={error} operation="WorkloadObservability" />
      ) : (app?.alerts ?? []).length === 0 ? (
        <Empty text="Nothing is firing." />
      ) : (
        <AlertList alerts={app.alerts} />
      )}
    </Section>
  );
}

// "2026-11-23T10:00:01.123456+00:00" → "10:00:01.123": the kubelet's time, once, beside the line.
function clock(time: string): string {
  return time.slice(11, 23);
}

function WorkloadLogs({ workload }: PanelProps) {
  const [filter, setFilter] = useState("");
  const [applied, setApplied] = useState<string | null>(null);
  const [follow, setFollow] = useState(false);
  const [live, setLive] = useState<any[]>([]);
  const variables = { ...workload!, filter: applied };
  const { data, error, loading } = useQuery<any>(document("WorkloadLogs"), { variables, errorPolicy: "all" });
  useSubscription<any>(document("WorkloadLogTail"), {
    variables,
    skip: !follow,
    onData: ({ data: message }) => {
      const line = message.data?.pinAppLogTail;
      if (line) setLive((old) => [...old, line].slice(-1000));
    },
  });
  const logs = data?.pinApp?.logs;
  const lines: any[] = [...(logs?.lines ?? []), ...live];
  return (
    <Section id="logs" title="Logs">
      <form
        className="atrium-log-tools"
        onSubmit={(event) => {
          event.preventDefault();
          setLive([]);
          setApplied(filter || null);
        }}
      >
        <TextField id="log-filter" label="Lines holding" value={filter} onChange={({ value }) => setFilter(value)} size="md" />
        <button type="submit" className="atrium-plain-button">
          Filter
        </button>
        <label className="atrium-toggle">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} />
          <Span>Follow live</Span>
        </label>
      </form>
      {loading && !data ? (
        <Loading />
      ) : logs === null || (!data && error) ? (
        <Unavailable error={error} operation="WorkloadLogs" />
      ) : (
        <>
          {logs?.truncated ? <Small>Older lines are left out.</Small> : null}
          {(logs?.podErrors ?? []).map((e: any) => (
            <Notice key={e.pod} tone="error" text={`${e.pod}: ${e.message}`} />
          ))}
          <pre className="atrium-code" aria-label="The merged log of its pods" tabIndex={0}>
            {lines.length
              ? lines.map((l, i) => (
                  <span key={i} className="atrium-log-line">
                    <span className="atrium-log-time">{clock(l.time)}</span> <span className="atrium-log-pod">{l.pod}</span> {l.text}
                    {"\n"}
                  </span>
                ))
              : "No lines."}
          </pre>
        </>
      )}
    </Section>
  );
}

// The entity and team panels need their backend's panel operation on the page (the server
// offers it); the workload page's fetch for themselves.
export const panels: PluginPanel[] = [
  { page: "entity", kinds: ["component"], requires: "EntityMetrics", section: ["metrics", "Metrics"], component: Metrics },
  { page: "entity", kinds: ["component"], requires: "EntityAlerts", section: ["alerts", "Alerts"], component: Alerts },
  { page: "team", requires: "TeamAlerts", section: ["alerts", "Alerts"], component: TeamAlerts },
  { page: "team", requires: "TeamErrorRatios", section: ["error-ratios", "Error ratios"], component: TeamErrorRatios },
  { page: "workload", section: ["metrics", "Metrics"], component: WorkloadMetrics },
  { page: "workload", section: ["alerts", "Alerts"], component: WorkloadAlerts },
  { page: "workload", section: ["logs", "Logs"], component: WorkloadLogs },
];
