// Small line charts drawn as inline SVG by this page (no library): one line per series over
// the last 15 minutes of samples.

const NS = "http://www.w3.org/2000/svg";
const W = 600, H = 140, PAD = 28;

function svg(tag, attrs) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/** Draws `series` (a Map of name → [[t, value]...]) into `root`, with a legend. */
export function lineChart(root, series, unit = "") {
  const points = [...series.values()].flat();
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img" });
  const legend = document.createElement("div");
  legend.className = "legend";
  if (!points.length) {
    const empty = svg("text", { x: PAD, y: H / 2, class: "label" });
    empty.textContent = "no samples yet";
    chart.append(empty);
    root.replaceChildren(chart, legend);
    return;
  }
  const t0 = Math.min(...points.map((p) => p[0])), t1 = Math.max(...points.map((p) => p[0]), t0 + 1);
  const top = Math.max(1, ...points.map((p) => p[1]));
  const x = (t) => PAD + ((t - t0) / (t1 - t0)) * (W - PAD - 4);
  const y = (v) => H - 14 - (v / top) * (H - 24);
  chart.append(svg("line", { x1: PAD, y1: H - 14, x2: W - 4, y2: H - 14, class: "axis" }));
  const max = svg("text", { x: 2, y: 12, class: "label" });
  max.textContent = `${Number.isInteger(top) ? top : top.toFixed(1)}${unit}`;
  const span = svg("text", { x: PAD, y: H - 2, class: "label" });
  const seconds = Math.round((t1 - t0) / 1000);
  span.textContent = seconds < 120 ? `last ${seconds} s` : `last ${Math.round(seconds / 60)} min`;
  chart.append(max, span);
  let i = 0;
  for (const [name, values] of series) {
    const color = `c${i++ % 6}`;
    chart.append(svg("polyline", { class: color, points: values.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ") }));
    if (values.length === 1) {
      // a line of one point draws nothing: a dot instead
      const [[t, v]] = values;
      chart.append(svg("circle", { class: `dot ${color}`, cx: x(t).toFixed(1), cy: y(v).toFixed(1), r: 3 }));
    }
    const swatch = document.createElement("span");
    swatch.className = `swatch ${color}`;
    const item = document.createElement("span");
    item.append(swatch, document.createTextNode(name));
    legend.append(item);
  }
  root.replaceChildren(chart, legend);
}

/** The series of one sample field, by key: `pick(sample)` gives [name, value] pairs. */
export function seriesOf(samples, pick) {
  const out = new Map();
  for (const s of samples) {
    for (const [name, value] of pick(s)) {
      if (value === null || value === undefined) continue;
      if (!out.has(name)) out.set(name, []);
      out.get(name).push([s.t, value]);
    }
  }
  return out;
}
