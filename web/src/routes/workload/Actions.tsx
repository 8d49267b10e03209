/* eslint-disable @typescript-eslint/no-explicit-any */
import { useMutation } from "@apollo/client/react";
import { NumberField, TextField } from "gestalt";
import { useState } from "react";
import { ConfirmAction } from "../../components/Confirm";
import { document } from "../../documents";
import { Para } from "../../kit";

// What an owner may do to a workload, each confirmed first (the server checks again): scale
// (a PinScaler's bounds, else the replicas), restart, set the image.
export function WorkloadActions({ app }: { app: any }) {
  const key = { cluster: app.cluster, namespace: app.namespace, name: app.name };
  const [scale] = useMutation<any>(document("ScaleWorkload"));
  const [restart] = useMutation<any>(document("RestartWorkload"));
  const [setImage] = useMutation<any>(document("SetWorkloadImage"));
  const scaler = app.scaler;
  const [min, setMin] = useState<number | undefined>(scaler?.minReplicas ?? undefined);
  const [max, setMax] = useState<number | undefined>(scaler?.maxReplicas ?? undefined);
  const [replicas, setReplicas] = useState<number | undefined>(app.replicas ?? undefined);
  const [image, setImageText] = useState<string>(app.image ?? "");
  const limit: number | null = app.maxReplicasAllowed ?? null;

  const bounds = (a: any, b: any) => `${a ?? "?"}–${b ?? "?"}`;
  const scaleProblem = scaler
    ? min === undefined || max === undefined
      ? "Give a minimum and a maximum."
      : min < 0 || max < 1
        ? "The bounds must be at least 0 and 1."
        : min > max
          ? "The minimum cannot be above the maximum."
          : limit !== null && max > limit
            ? `The team's quota allows at most ${limit} replicas.`
            : min === scaler.minReplicas && max === scaler.maxReplicas
              ? "These are its bounds already."
              : null
    : replicas === undefined || replicas < 0
      ? "Give a number of replicas."
      : limit !== null && replicas > limit
        ? `The team's quota allows at most ${limit} replicas.`
        : replicas === app.replicas
          ? `It runs ${replicas} already.`
          : null;

  return (
    <>
      <ConfirmAction
        label="Scale…"
        title={`Scale ${app.name}?`}
        confirm="Scale"
        pending="Scaling…"
        ready={scaleProblem === null}
        onOpen={() => {
          setMin(scaler?.minReplicas ?? undefined);
          setMax(scaler?.maxReplicas ?? undefined);
          setReplicas(app.replicas ?? undefined);
        }}
        run={async () => {
          const variables = scaler ? { ...key, minReplicas: min, maxReplicas: max } : { ...key, replicas };
          await scale({ variables });
          return {
            ok: true,
            text: scaler
              ? `${app.name} now scales between ${bounds(min, max)} replicas.`
              : `${app.name} now runs ${replicas} replicas.`,
          };
        }}
      >
        {scaler ? (
          <>
            <Para>{`Its PinScaler keeps it between ${bounds(scaler.minReplicas, scaler.maxReplicas)} replicas. New bounds: ${bounds(min, max)}.`}</Para>
            <div className="atrium-fields">
              <NumberField id="scale-min" label="Minimum replicas" min={0} value={min} onChange={({ value }) => setMin(value)} />
              <NumberField id="scale-max" label="Maximum replicas" min={1} value={max} onChange={({ value }) => setMax(value)} />
            </div>
          </>
        ) : (
          <>
            <Para>{`It runs ${app.replicas ?? "?"} replicas, with no PinScaler. New count: ${replicas ?? "?"}.`}</Para>
            <NumberField id="scale-replicas" label="Replicas" min={0} value={replicas} onChange={({ value }) => setReplicas(value)} />
          </>
        )}
        {limit !== null ? <Para tone="subtle">{`The owning team's quota allows at most ${limit}.`}</Para> : null}
        {scaleProblem ? <Para tone="error">{scaleProblem}</Para> : null}
      </ConfirmAction>
      <ConfirmAction
        label="Restart…"
        title={`Restart ${app.name}?`}
        confirm="Restart"
        pending="Restarting…"
        run={async () => {
          await restart({ variables: key });
          return { ok: true, text: `${app.name} is restarting: its pods are replaced one at a time.` };
        }}
      >
        <Para>{`Its ${app.desiredReplicas} pods are replaced one at a time, in ${app.cluster}/${app.namespace}.`}</Para>
      </ConfirmAction>
      <ConfirmAction
        label="Set image…"
        title={`Set the image of ${app.name}?`}
        confirm="Set image"
        pending="Rolling out…"
        ready={Boolean(image.trim()) && image.trim() !== app.image}
        onOpen={() => setImageText(app.image ?? "")}
        run={async () => {
          await setImage({ variables: { ...key, image: image.trim() } });
          return { ok: true, text: `${app.name} is rolling out ${image.trim()}.` };
        }}
      >
        <Para>{`From ${app.image ?? "no image"} to ${image.trim() || "…"}.`}</Para>
        <TextField id="set-image" label="Image" value={image} onChange={({ value }) => setImageText(value)} />
      </ConfirmAction>
    </>
  );
}
