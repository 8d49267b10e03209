// A time-series chart drawn by uPlot (small, canvas-based), loaded in a chunk of its own when a
// metrics panel first shows. `series` share their time axis; `bounds` are dashed lines (a
// PinApp's request and limit).
import "uplot/dist/uPlot.min.css";
import { useEffect, useRef } from "react";
import uPlot from "uplot";
import { useColorScheme } from "../../theme";

export interface Line {
  label: string;
  points: (number | null)[][];
}

export interface Props {
  title: string;
  lines: Line[];
  bounds?: { label: string; value: number }[];
  format: (value: number) => string;
  height: number;
}

const COLOURS = ["#0074e8", "#e60023", "#008753", "#b35900", "#7a2ed6", "#5b5b5b"];

export default function Chart({ title, lines, bounds = [], format, height }: Props) {
  const box = useRef<HTMLDivElement>(null);
  // The canvas takes no colour from CSS: its axes are drawn in the page's text colour, and
  // drawn again when the scheme changes.
  const scheme = useColorScheme();
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const ink = getComputedStyle(element).color;
    const faint = scheme === "dark" ? "rgba(255,255,255,0.12)" : "rgba(0,0,0,0.07)";
    const axis = { stroke: ink, grid: { stroke: faint }, ticks: { stroke: faint } };
    // One time axis for all lines: the union of their times, a gap where a line has none.
    const times = [...new Set(lines.flatMap((l) => l.points.map((p) => p[0] as number)))].sort(
      (a, b) => a - b,
    );
    const index = new Map(times.map((t, i) => [t, i]));
    const values = lines.map((l) => {
      const row: (number | null)[] = new Array(times.length).fill(null);
      for (const [t, v] of l.points) row[index.get(t as number)!] = v ?? null;
      return row;
    });
    const flat = bounds.map((b) => times.map(() => b.value));
    const plot = new uPlot(
      {
        width: element.clientWidth || 600,
        height,
        title,
        legend: { show: true },
        scales: { x: { time: true } },
        axes: [axis, { ...axis, values: (_u, ticks) => ticks.map(format), size: 70 }],
        series: [
          {},
          ...lines.map((l, i) => ({
            label: l.label,
            stroke: COLOURS[i % COLOURS.length],
            width: 1.5,
            value: (_u: uPlot, v: number | null) => (v === null ? "—" : format(v)),
          })),
          ...bounds.map((b) => ({ label: b.label, stroke: "#767676", dash: [6, 4], width: 1 })),
        ],
      },
      [times, ...values, ...flat] as uPlot.AlignedData,
      element,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: element.clientWidth, height }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [title, lines, bounds, format, height, scheme]);
  return <div ref={box} className="atrium-chart" style={{ minHeight: height }} />;
}
