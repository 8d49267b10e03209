// How the deployments panels word things, as the server's templates do
// (plugins/deployments/templates/, through the plugin's template globals).
import type { StatusType } from "../../kit";

// "2026-11-20T15:20:53.1+00:00" → "2026-11-20 15:20 UTC", as the server's template writes it.
export function when(iso: string | null | undefined): string {
  return iso ? `${iso.slice(0, 16).replace("T", " ")} UTC` : "";
}

export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return "no data";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} days`;
}

export function stateWord(state: string): string {
  return state.toLowerCase().replace("_", " ");
}

const STATUS: Record<string, StatusType> = {
  SUCCEEDED: "ok",
  FAILED: "problem",
  IN_PROGRESS: "inProgress",
  PENDING: "queued",
  ROLLED_BACK: "halted",
  CANCELLED: "canceled",
};

export function deployStatus(state: string): StatusType {
  return STATUS[state] ?? "unstarted";
}
