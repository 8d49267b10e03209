/* eslint-disable @typescript-eslint/no-explicit-any */
import "gestalt/dist/gestalt.css";
import { useMutation, useQuery, useSubscription } from "@apollo/client/react";
import { Button, Layer, Modal, NumberField, TextField } from "gestalt";
import { useState } from "react";
import { useParams } from "react-router";
import { EntityLink } from "../components/EntityLink";
import { Panel } from "../components/Panel";
import { unavailableClusters } from "../components/Workloads";
import { document } from "../documents";
import { PluginPanels } from "../plugins";

export default function Workload() {
  const { cluster = "", namespace = "", name = "" } = useParams();
  const key = { cluster, namespace, name };
  const { data, error, loading } = useQuery<any>(document("WorkloadPage"), { variables: key });
  const app = data?.pinApp;
  const down = unavailableClusters(data?.clusters)[cluster];
  if (error && !data) {
    return (
      <p className="atrium-error" role="alert">
        Could not load {cluster}/{namespace}/{name}: {error.message}
      </p>
    );
  }
  if (loading && !data) return <p className="atrium-loading" role="status">Loading…</p>;
  if (!app) {
    return (
      <>
        <h1 className="atrium-title">{name}</h1>
        <p>
          {data.clusters.length === 0
            ? "No Kubernetes cluster is configured."
            : `No PinApp ${namespace}/${name} in cluster ${cluster}.`}
        </p>
      </>
    );
  }
  return (
    <>
      <h1 className="atrium-title">{app.name}</h1>
      <p className="atrium-muted">
        PinApp · {app.cluster}/{app.namespace}
        {app.entity ? (
          <>
            {" · "}
            <EntityLink entity={app.entity} />
          </>
        ) : null}
      </p>
      {down ? (
        <p className="atrium-error" role="alert">
          Cluster {cluster} cannot answer ({down}): what is shown may be out of date.
        </p>
      ) : null}
      {app.viewerCanManage ? <Actions app={app} /> : null}
      <Panel id="status" heading="Status">
        <dl className="atrium-facts">
          <dt>Image</dt>
          <dd>{app.image ?? "—"}</dd>
          <dt>Replicas</dt>
          <dd>{app.replicas ?? "—"}</dd>
          <dt>Ready</dt>
          <dd>
            {app.readyReplicas} of {app.desiredReplicas} replicas
          </dd>
          <dt>Rollout</dt>
          <dd>{Math.round(app.rolloutProgress * 100)}%</dd>
          {app.ingressHost ? (
            <>
              <dt>Ingress</dt>
              <dd>{app.ingressHost}</dd>
            </>
          ) : null}
        </dl>
        {app.conditions.length ? (
          <ul className="atrium-list">
            {app.conditions.map((c: any) => (
              <li key={c.type}>
                {c.type}: {c.status}
                {c.reason ? ` (${c.reason})` : ""}
                {c.message ? <span className="atrium-muted"> {c.message}</span> : null}
              </li>
            ))}
          </ul>
        ) : null}
      </Panel>
      <Panel id="scaler" heading="PinScaler">
        {app.scaler ? (
          <dl className="atrium-facts">
            <dt>Bounds</dt>
            <dd>
              {app.scaler.minReplicas ?? "—"} to {app.scaler.maxReplicas ?? "—"} replicas
            </dd>
            <dt>Decision</dt>
            <dd>
              {app.scaler.decision
                ? `${app.scaler.decision.replicas} (${app.scaler.decision.reason})`
                : "—"}
            </dd>
          </dl>
        ) : (
          <p className="atrium-muted">No PinScaler: the replicas are fixed.</p>
        )}
      </Panel>
      <Panel id="pods" heading="Pods">
        {app.pods.length ? (
          <ul className="atrium-list">
            {app.pods.map((p: any) => (
              <li key={p.name}>
                {p.name} <span className="atrium-muted">{p.phase}</span>
                {p.ready ? " ready" : " not ready"}
                {p.restarts ? `, ${p.restarts} restarts` : ""}
              </li>
            ))}
          </ul>
        ) : (
          <p className="atrium-muted">No pods.</p>
        )}
      </Panel>
      {app.pods.length ? <LogTail cluster={cluster} namespace={namespace} pods={app.pods} /> : null}
      <Panel id="events" heading="Events">
        {app.events.length ? (
          <ul className="atrium-list">
            {app.events.map((e: any, i: number) => (
              <li key={i}>
                <span className={e.type === "Warning" ? "atrium-error" : undefined}>{e.reason}</span>{" "}
                {e.message}
                {e.count > 1 ? <span className="atrium-muted"> ×{e.count}</span> : null}
              </li>
            ))}
          </ul>
        ) : (
          <p className="atrium-muted">No recent events.</p>
        )}
      </Panel>
      <PluginPanels page="workload" pageRef={`${cluster}/${namespace}/${name}`} workload={key} />
    </>
  );
}

// What an owner may do (the server checks again): scale, restart, set the image.
function Actions({ app }: { app: any }) {
  const key = { cluster: app.cluster, namespace: app.namespace, name: app.name };
  const [dialog, setDialog] = useState<"scale" | "image" | null>(null);
  const [replicas, setReplicas] = useState<number | undefined>(app.replicas ?? 1);
  const [image, setImage] = useState<string>(app.image ?? "");
  const [scale, scaling] = useMutation<any>(document("ScaleWorkload"));
  const [restart, restarting] = useMutation<any>(document("RestartWorkload"));
  const [setImageOf, imaging] = useMutation<any>(document("SetWorkloadImage"));
  const failure = scaling.error ?? restarting.error ?? imaging.error;
  return (
    <>
      <div className="atrium-actions">
        <Button text="Scale…" onClick={() => setDialog("scale")} />
        <Button
          text="Restart"
          disabled={restarting.loading}
          onClick={() => restart({ variables: key }).catch(() => undefined)}
        />
        <Button text="Set image…" onClick={() => setDialog("image")} />
      </div>
      {failure ? (
        <p className="atrium-error" role="alert">
          Refused: {failure.message}
        </p>
      ) : null}
      {dialog ? (
        <Layer>
          <Modal
            accessibilityModalLabel={dialog === "scale" ? "Scale the workload" : "Set the image"}
            heading={dialog === "scale" ? `Scale ${app.name}` : `Set the image of ${app.name}`}
            onDismiss={() => setDialog(null)}
            size="sm"
            footer={
              <div className="atrium-actions">
                <Button text="Cancel" onClick={() => setDialog(null)} />
                {dialog === "scale" ? (
                  <Button
                    text="Scale"
                    color="red"
                    disabled={replicas === undefined || scaling.loading}
                    onClick={() => {
                      setDialog(null);
                      scale({ variables: { ...key, replicas } }).catch(() => undefined);
                    }}
                  />
                ) : (
                  <Button
                    text="Set image"
                    color="red"
                    disabled={!image || imaging.loading}
                    onClick={() => {
                      setDialog(null);
                      setImageOf({ variables: { ...key, image } }).catch(() => undefined);
                    }}
                  />
                )}
              </div>
            }
          >
            {dialog === "scale" ? (
              <NumberField
                id="scale-replicas"
                label="Replicas"
                min={0}
                value={replicas}
                onChange={({ value }) => setReplicas(value)}
              />
            ) : (
              <TextField
                id="set-image"
                label="Image"
                value={image}
                onChange={({ value }) => setImage(value)}
              />
            )}
          </Modal>
        </Layer>
      ) : null}
    </>
  );
}

// A pod's log as it is written (the podLogTail subscription), when a person asks for it.
function LogTail({ cluster, namespace, pods }: { cluster: string; namespace: string; pods: any[] }) {
  const [pod, setPod] = useState<string | null>(null);
  const [lines, setLines] = useState<string[]>([]);
  const { error } = useSubscription<any>(document("PodLogTail"), {
    variables: { cluster, namespace, pod },
    skip: pod === null,
    onData: ({ data }) => {
      const line = data.data?.podLogTail;
      if (typeof line === "string") setLines((old) => [...old.slice(-499), line]);
    },
  });
  return (
    <Panel id="log" heading="Log">
      <div className="atrium-actions">
        {pods.map((p) => (
          <Button
            key={p.name}
            text={pod === p.name ? `Following ${p.name}` : `Follow ${p.name}`}
            size="sm"
            onClick={() => {
              setLines([]);
              setPod(pod === p.name ? null : p.name);
            }}
          />
        ))}
      </div>
      {error ? (
        <p className="atrium-error" role="alert">
          The log stopped: {error.message}
        </p>
      ) : null}
      {pod ? (
        <pre className="atrium-log" aria-live="polite" aria-label={`Log of ${pod}`}>
          {lines.join("\n") || "Waiting for lines…"}
        </pre>
      ) : null}
    </Panel>
  );
}
