/* eslint-disable @typescript-eslint/no-explicit-any */
// The observability plugin's panels: a component's alerts (silence and expire for its owners)
// and metrics (rate, errors, latency over 1 h, 24 h or 7 d), a team's alerts and its services'
// error ratios side by side, a PinApp's CPU and memory against its requests and limits, its
// alerts and its pods' merged log, followed live. The server renders the alerts and the latest
// figures with the same markup (plugins/observability/templates/); charts draw once the chart
// chunk has loaded, in boxes of the height the server reserved.
import { useApolloClient, useMutation, useQuery, useSubscription } from "@apollo/client/react";
import { lazy, Suspense, useMemo, useState } from "react";
import { Panel } from "../../components/Panel";
import { document } from "../../documents";
import type { PanelProps, PluginPanel } from "../../plugins";
import type { Line } from "./Chart";

const Chart = lazy(() => import("./Chart"));
const CHART_HEIGHT = 180;

export const RANGES: [string, number][] = [
  ["1 h", 3600],
  ["24 h", 86400],
  ["7 d", 604800],
];

// The figures the server's template shows too: same rounding, same words.
export function rate(v: number | null | undefined): string {
  return v === null || v === undefined ? "no data" : `${v.toFixed(2)}/s`;
}
export function ratio(v: number | null | undefined): string {
  return v === null || v === undefined ? "no data" : `${(v * 100).toFixed(2)}%`;
}
export function seconds(v: number | null | undefined): string {
  return v === null || v === undefined ? "no data" : `${(v * 1000).toFixed(1)} ms`;
}
function cores(v: number): string {
  return v.toFixed(v < 1 ? 3 : 2);
}
function bytes(v: number): string {
  if (v >= 2 ** 30) return `${(v / 2 ** 30).toFixed(2)} GiB`;
  return `${(v / 2 ** 20).toFixed(0)} MiB`;
}

// The newest value a series has (null when it has none).
export function latest(series: any): number | null {
  const points: (number | null)[][] = series?.points ?? [];
  for (let i = points.length - 1; i >= 0; i--) {
    const v = points[i]?.[1];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}

function unavailable(error: any): string | null {
  return error ? `Unavailable: ${error.message}` : null;
}

function ChartBox(props: { title: string; lines: Line[]; format: (v: number) => string; bounds?: { label: string; value: number }[] }) {
  return (
    <figure className="atrium-figure">
      <Suspense fallback={<div className="atrium-chart" style={{ minHeight: CHART_HEIGHT }} />}>
        <Chart {...props} height={CHART_HEIGHT} />
      </Suspense>
    </figure>
  );
}

// 1 h / 24 h / 7 d, the chosen one pressed (the server's template renders 1 h pressed).
function Ranges({ since, onChange }: { since: number; onChange: (since: number) => void }) {
  return (
    <p className="atrium-actions" role="group" aria-label="Range">
      {RANGES.map(([label, value]) => (
        <button
          key={value}
          type="button"
          className="atrium-button"
          aria-pressed={since === value}
          onClick={() => onChange(value)}
        >
          {label}
        </button>
      ))}
    </p>
  );
}

function Metrics({ pageRef }: PanelProps) {
  const [since, setSince] = useState(3600);
  const { data, error, loading } = useQuery<any>(document("EntityMetrics"), {
    variables: { ref: pageRef, since },
    errorPolicy: "all",
  });
  const series: any[] = data?.entity?.metrics ?? [];
  const named = (name: string) => series.filter((s) => s.name === name);
  const lines = (name: string, label?: string): Line[] =>
    named(name).map((s) => ({ label: label ?? name, points: s.points }));
  const latency = ["latency_p50", "latency_p95", "latency_p99"].flatMap((n) =>
    lines(n, n.replace("latency_", "")),
  );
  const failed = data?.entity && data.entity.metrics === null ? unavailable(error) : null;
  return (
    <Panel id="metrics" heading="Metrics" loading={loading && !data} error={data ? null : error}>
      <Ranges since={since} onChange={setSince} />
      {failed ? (
        <p className="atrium-muted" role="status">
          {failed}
        </p>
      ) : series.length === 0 ? (
        <p className="atrium-muted">Prometheus has no series for this component.</p>
      ) : (
        <>
          <dl className="atrium-facts">
            <dt>Requests</dt>
            <dd>{rate(latest(named("request_rate")[0]))}</dd>
            <dt>Errors</dt>
            <dd>{ratio(latest(named("error_ratio")[0]))}</dd>
            <dt>Latency p95</dt>
            <dd>{seconds(latest(named("latency_p95")[0]))}</dd>
          </dl>
          <ChartBox title="Requests per second" lines={lines("request_rate", "requests/s")} format={(v) => v.toFixed(1)} />
          <ChartBox title="Error ratio" lines={lines("error_ratio", "errors")} format={(v) => `${(v * 100).toFixed(1)}%`} />
          <ChartBox title="Latency" lines={latency} format={(v) => `${(v * 1000).toFixed(0)} ms`} />
        </>
      )}
    </Panel>
  );
}

const DURATIONS: [string, number][] = [
  ["1 hour", 3600],
  ["4 hours", 14400],
  ["1 day", 86400],
];

function AlertRows({ alerts, owner, onExpire }: { alerts: any[]; owner?: boolean; onExpire?: (id: string) => void }) {
  return (
    <ul className="atrium-list atrium-alerts">
      {alerts.map((a, i) => (
        <li key={`${a.name}-${i}`} className={`atrium-alert atrium-alert-${a.state.toLowerCase()}`}>
          <strong>{a.name}</strong>
          {a.severity ? <span className="atrium-muted"> · {a.severity}</span> : null}
          <span className="atrium-muted"> · {a.state.toLowerCase()} since {a.startsAt.slice(0, 16).replace("T", " ")}</span>
          {a.summary ? <> — {a.summary}</> : null}
          {a.runbookUrl ? (
            <>
              {" "}
              <a href={a.runbookUrl} rel="noopener">
                runbook
              </a>
            </>
          ) : null}
          {owner && onExpire
            ? (a.silencedBy ?? []).map((id: string) => (
                <button key={id} type="button" className="atrium-button" onClick={() => onExpire(id)}>
                  Expire silence
                </button>
              ))
            : null}
        </li>
      ))}
    </ul>
  );
}

function Alerts({ pageRef }: PanelProps) {
  const query = document("EntityAlerts");
  const variables = { ref: pageRef };
  const client = useApolloClient();
  const { data, error, loading } = useQuery<any>(query, { variables, errorPolicy: "all" });
  const [create, creating] = useMutation<any>(document("CreateSilence"));
  const [expire, expiring] = useMutation<any>(document("ExpireSilence"));
  const [alertName, setAlertName] = useState("");
  const [duration, setDuration] = useState(3600);
  const [comment, setComment] = useState("");
  const [said, setSaid] = useState<{ ok: boolean; text: string } | null>(null);
  const component = data?.entity;
  const alerts: any[] = component?.alerts ?? [];
  const owner = Boolean(component?.viewerCanSilence);
  const failed = component && component.alerts === null ? unavailable(error) : null;

  // Alertmanager applies a silence as it evaluates: look again now and a moment later.
  const refresh = () => {
    const again = () =>
      client.query({ query, variables, fetchPolicy: "network-only", context: { fetchOptions: { cache: "no-cache" } } });
    void again();
    setTimeout(() => void again(), 1500);
  };

  async function act(run: () => Promise<any>, what: string) {
    setSaid(null);
    try {
      await run();
      setSaid({ ok: true, text: what });
      refresh();
    } catch (e) {
      setSaid({ ok: false, text: `Refused: ${(e as Error).message}` });
    }
  }

  return (
    <Panel id="alerts" heading="Alerts" loading={loading && !data} error={data ? null : error}>
      {failed ? (
        <p className="atrium-muted" role="status">
          {failed}
        </p>
      ) : alerts.length === 0 ? (
        <p className="atrium-muted">Nothing is firing.</p>
      ) : (
        <AlertRows
          alerts={alerts}
          owner={owner}
          onExpire={(id) => void act(() => expire({ variables: { id } }), "Silence expired")}
        />
      )}
      {owner && !failed ? (
        <form
          className="atrium-form"
          onSubmit={(event) => {
            event.preventDefault();
            void act(
              () =>
                create({
                  variables: { ref: pageRef, alertName: alertName || null, durationSeconds: duration, comment },
                }),
              "Silenced",
            );
          }}
        >
          <label>
            Alert{" "}
            <select value={alertName} onChange={(e) => setAlertName(e.target.value)}>
              <option value="">all of this component's</option>
              {[...new Set(alerts.map((a) => a.name))].map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </label>{" "}
          <label>
            for{" "}
            <select value={duration} onChange={(e) => setDuration(Number(e.target.value))}>
              {DURATIONS.map(([label, value]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </label>{" "}
          <label>
            because <input required value={comment} onChange={(e) => setComment(e.target.value)} />
          </label>{" "}
          <button type="submit" className="atrium-button" disabled={creating.loading || expiring.loading}>
            Silence
          </button>
        </form>
      ) : null}
      {said ? (
        <p className={said.ok ? "atrium-muted" : "atrium-error"} role={said.ok ? "status" : "alert"}>
          {said.text}
        </p>
      ) : null}
    </Panel>
  );
}

function TeamAlerts({ pageRef }: PanelProps) {
  const { data, error, loading } = useQuery<any>(document("TeamAlerts"), {
    variables: { ref: pageRef },
    errorPolicy: "all",
  });
  const group = data?.entity;
  const alerts: any[] = group?.alerts ?? [];
  const failed = group && group.alerts === null ? unavailable(error) : null;
  const active = alerts.filter((a) => a.state === "ACTIVE").length;
  return (
    <Panel id="team-alerts" heading="Alerts" loading={loading && !data} error={data ? null : error}>
      {failed ? (
        <p className="atrium-muted" role="status">
          {failed}
        </p>
      ) : alerts.length === 0 ? (
        <p className="atrium-muted">Nothing is firing on the team's components.</p>
      ) : (
        <>
          <p>
            {active} active, {alerts.length - active} silenced
          </p>
          <AlertRows alerts={alerts} />
        </>
      )}
    </Panel>
  );
}

function TeamErrorRatios({ pageRef }: PanelProps) {
  const { data, error, loading } = useQuery<any>(document("TeamErrorRatios"), {
    variables: { ref: pageRef },
    errorPolicy: "all",
  });
  const lines: Line[] = useMemo(
    () =>
      (data?.entitiesOwnedBy?.nodes ?? [])
        .flatMap((n: any) => (n.metrics ?? []).map((s: any) => ({ label: n.name, points: s.points })))
        .slice(0, 12),
    [data],
  );
  const nodes: any[] = data?.entitiesOwnedBy?.nodes ?? [];
  const failed = nodes.some((n) => n.metrics === null) ? unavailable(error) : null;
  return (
    <Panel id="error-ratios" heading="Error ratios (last 24 h)" loading={loading && !data} error={data ? null : error}>
      {failed ? (
        <p className="atrium-muted" role="status">
          {failed}
        </p>
      ) : lines.length === 0 ? (
        <p className="atrium-muted">Prometheus has no error ratios for the team's services.</p>
      ) : (
        <ChartBox title="Error ratio by service" lines={lines} format={(v) => `${(v * 100).toFixed(1)}%`} />
      )}
    </Panel>
  );
}

function WorkloadMetrics({ workload }: PanelProps) {
  const [since, setSince] = useState(3600);
  const { data, error, loading } = useQuery<any>(document("WorkloadObservability"), {
    variables: { ...workload!, since },
    errorPolicy: "all",
  });
  const app = data?.pinApp;
  const series: any[] = app?.metrics ?? [];
  const perPod = (name: string): Line[] =>
    series.filter((s) => s.name === name).map((s) => ({ label: s.labels.pod ?? name, points: s.points }));
  const b = app?.resourceBounds ?? {};
  const bounds = (request: number | null, limit: number | null) => [
    ...(request !== null && request !== undefined ? [{ label: "request", value: request }] : []),
    ...(limit !== null && limit !== undefined ? [{ label: "limit", value: limit }] : []),
  ];
  const metricsFailed = app && app.metrics === null;
  const alertsFailed = app && app.alerts === null;
  return (
    <>
      <Panel id="usage" heading="CPU and memory" loading={loading && !data} error={data ? null : error}>
        <Ranges since={since} onChange={setSince} />
        {metricsFailed ? (
          <p className="atrium-muted" role="status">
            {unavailable(error)}
          </p>
        ) : series.length === 0 ? (
          <p className="atrium-muted">Prometheus has no CPU or memory series for its pods.</p>
        ) : (
          <>
            <ChartBox title="CPU (cores) per pod" lines={perPod("cpu")} format={cores} bounds={bounds(b.cpuRequest, b.cpuLimit)} />
            <ChartBox title="Memory per pod" lines={perPod("memory")} format={bytes} bounds={bounds(b.memoryRequest, b.memoryLimit)} />
          </>
        )}
      </Panel>
      <Panel id="workload-alerts" heading="Alerts">
        {alertsFailed ? (
          <p className="atrium-muted" role="status">
            {unavailable(error)}
          </p>
        ) : (app?.alerts ?? []).length === 0 ? (
          <p className="atrium-muted">Nothing is firing.</p>
        ) : (
          <AlertRows alerts={app.alerts} />
        )}
      </Panel>
    </>
  );
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
    <Panel id="logs" heading="Logs" loading={loading && !data} error={data ? null : error}>
      <form
        className="atrium-form"
        onSubmit={(event) => {
          event.preventDefault();
          setLive([]);
          setApplied(filter || null);
        }}
      >
        <label>
          Lines holding <input value={filter} onChange={(e) => setFilter(e.target.value)} />
        </label>{" "}
        <button type="submit" className="atrium-button">
          Filter
        </button>{" "}
        <label>
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow
        </label>
      </form>
      {logs === null ? (
        <p className="atrium-muted" role="status">
          {unavailable(error)}
        </p>
      ) : (
        <>
          {logs?.truncated ? <p className="atrium-muted">Older lines are left out.</p> : null}
          {(logs?.podErrors ?? []).map((e: any) => (
            <p key={e.pod} className="atrium-error" role="alert">
              {e.pod}: {e.message}
            </p>
          ))}
          <pre className="atrium-log" aria-label="Merged log of its pods">
            {lines.map((l) => `${l.time.slice(11, 23)} ${l.pod} ${l.text}`).join("\n") || "No lines."}
          </pre>
        </>
      )}
    </Panel>
  );
}

// Each needs its backend configured: the server offers the panel operations only then.
export const panels: PluginPanel[] = [
  { page: "entity", kinds: ["component"], requires: "EntityAlerts", component: Alerts },
  { page: "entity", kinds: ["component"], requires: "EntityMetrics", component: Metrics },
  { page: "team", requires: "TeamAlerts", component: TeamAlerts },
  { page: "team", requires: "TeamErrorRatios", component: TeamErrorRatios },
  { page: "workload", requires: "EntityMetrics", component: WorkloadMetrics },
  { page: "workload", component: WorkloadLogs },
];
