// How the observability panels word figures, as the server's templates do
// (plugins/observability/templates/_words.html): same rounding, same words.
import type { BadgeType } from "../../kit";

export function rate(v: number | null | undefined): string {
  return v === null || v === undefined ? "no data" : `${v.toFixed(2)}/s`;
}
export function ratio(v: number | null | undefined): string {
  return v === null || v === undefined ? "no data" : `${(v * 100).toFixed(2)}%`;
}
export function seconds(v: number | null | undefined): string {
  return v === null || v === undefined ? "no data" : `${(v * 1000).toFixed(1)} ms`;
}
export function cores(v: number): string {
  return v.toFixed(v < 1 ? 3 : 2);
}
export function bytes(v: number): string {
  if (v >= 2 ** 30) return `${(v / 2 ** 30).toFixed(2)} GiB`;
  return `${(v / 2 ** 20).toFixed(0)} MiB`;
}

// "2026-11-23T10:00:01Z" → "2026-11-23 10:00 UTC".
export function since(iso: string): string {
  return `${iso.slice(0, 16).replace("T", " ")} UTC`;
}

const SEVERITIES: Record<string, BadgeType> = { critical: "error", page: "error", warning: "warning", ticket: "info", info: "info" };

export function severityBadge(severity: string): BadgeType {
  return SEVERITIES[severity.toLowerCase()] ?? "neutral";
}

// The newest value a series has (null when it has none).
export function latest(series: { points?: (number | null)[][] } | undefined): number | null {
  const points = series?.points ?? [];
  for (let i = points.length - 1; i >= 0; i--) {
    const v = points[i]?.[1];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}
