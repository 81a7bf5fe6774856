// ragpulse live page: polls /api/summary and draws it. Our own small SVG charts, no libraries.
// Record text is untrusted: it only ever reaches the page through textContent, never as markup.
// So are service, route, metric and reason names (they come from spans and labels): they are only
// ever Map keys, never keys of a plain object, where "toString" or "__proto__" would hit the
// prototype (a service named "toString" used to stop every refresh until the scorer restarted).
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const METRIC_COLORS = new Map([["faithfulness", "#c4320a"], ["answer_relevancy", "#1570ef"], ["context_relevancy", "#079455"]]);
const SERIES_COLORS = ["#1570ef", "#c4320a", "#079455", "#9e77ed", "#dc6803", "#0e9384", "#e31b54", "#475467"];
const POLL_MS = 5000;
const CHART_W = 420;
const CHART_H = 160;
const PAD = { left: 34, right: 8, top: 8, bottom: 20 };
// A name is shown up to this many characters (a 1 MB service name must not fill the page); the
// whole name is in the element's title.
const MAX_NAME = 120;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  return node;
}

// [key, value] pairs of a JSON object in key order. JSON.parse makes "__proto__" an own key like any
// other; Object.entries reads own keys only.
function entriesOf(obj) {
  return Object.entries(obj || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function shortName(name) {
  const s = String(name);
  return s.length > MAX_NAME ? `${s.slice(0, MAX_NAME)}…` : s;
}

// A table cell or caption for a name from a span: shortened, the full name in its title.
function nameEl(tag, name, attrs) {
  const node = el(tag, attrs, shortName(name));
  if (String(name).length > MAX_NAME) node.title = String(name);
  return node;
}

function fmt(x, digits = 3) {
  return x === null || x === undefined ? "–" : Number(x).toFixed(digits);
}

function clock(unixSeconds) {
  const d = new Date(unixSeconds * 1000);
  return String(d.getHours()).padStart(2, "0") + ":" + String(d.getMinutes()).padStart(2, "0");
}

// A line chart. series: [{name, color, points: [[t, y|null], ...]}]. A null y breaks the line, so a
// minute without scores shows as a gap, never as a made-up value. Points are drawn as dots too, so
// a series with one minute of data is still visible.
function lineChart(title, series, opts) {
  const { yMin, yMax, floor } = opts;
  const all = series.flatMap((s) => s.points.filter((p) => p[1] !== null));
  const fig = el("figure", { class: "chart" });
  fig.append(nameEl("figcaption", title));
  const svg = svgEl("svg", { class: "chart", width: CHART_W, height: CHART_H, viewBox: `0 0 ${CHART_W} ${CHART_H}`,
    role: "img", "aria-label": shortName(title), "data-points": all.length });
  const tMin = Math.min(...all.map((p) => p[0]), opts.now - 600);
  const tMax = Math.max(...all.map((p) => p[0]), opts.now);
  const top = yMax !== undefined ? yMax : Math.max(1, ...all.map((p) => p[1])) * 1.1;
  const x = (t) => PAD.left + ((t - tMin) / Math.max(tMax - tMin, 1)) * (CHART_W - PAD.left - PAD.right);
  const y = (v) => CHART_H - PAD.bottom - ((v - yMin) / (top - yMin)) * (CHART_H - PAD.top - PAD.bottom);
  svg.append(svgEl("line", { class: "axis", x1: PAD.left, x2: CHART_W - PAD.right, y1: y(yMin), y2: y(yMin) }));
  svg.append(svgEl("line", { class: "axis", x1: PAD.left, x2: PAD.left, y1: y(top), y2: y(yMin) }));
  for (const v of [yMin, (yMin + top) / 2, top]) {
    const label = svgEl("text", { x: PAD.left - 4, y: y(v) + 3, "text-anchor": "end" });
    label.textContent = top > 2 ? String(Math.round(v)) : v.toFixed(1);
    svg.append(label);
  }
  for (const [t, anchor] of [[tMin, "start"], [(tMin + tMax) / 2, "middle"], [tMax, "end"]]) {
    const label = svgEl("text", { x: x(t), y: CHART_H - 6, "text-anchor": anchor });
    label.textContent = clock(t);
    svg.append(label);
  }
  if (floor !== undefined) {
    svg.append(svgEl("line", { class: "floor", x1: PAD.left, x2: CHART_W - PAD.right, y1: y(floor), y2: y(floor) }));
  }
  for (const s of series) {
    let d = "";
    let pen = false;
    for (const [t, v] of s.points) {
      if (v === null) { pen = false; continue; }
      d += `${pen ? "L" : "M"}${x(t).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
      svg.append(svgEl("circle", { cx: x(t).toFixed(1), cy: y(v).toFixed(1), r: 2.5, fill: s.color }));
    }
    if (d) svg.append(svgEl("path", { class: "line", d, stroke: s.color, "data-series": s.name }));
  }
  fig.append(svg);
  const legend = el("div", { class: "legend" });
  for (const s of series) {
    const swatch = el("i");
    swatch.style.background = s.color;
    legend.append(el("span", {}, swatch, shortName(s.name)));
  }
  fig.append(legend);
  return fig;
}

function renderQuality(data) {
  const box = document.getElementById("quality");
  const charts = [];
  for (const [service, s] of entriesOf(data.series)) {
    const series = entriesOf(s.mean).map(([metric, values]) => ({
      name: metric, color: METRIC_COLORS.get(metric) || "#475467",
      points: s.t.map((t, i) => [t, values[i]]),
    }));
    charts.push(lineChart(service, series, { yMin: 0, yMax: 1, floor: data.low_threshold, now: data.now }));
  }
  box.replaceChildren(...(charts.length ? charts : [el("p", { class: "empty" }, "No scores yet.")]));
}

function renderVolume(data) {
  const series = entriesOf(data.series).map(([service, s], i) => ({
    name: service, color: SERIES_COLORS[i % SERIES_COLORS.length],
    points: s.t.map((t, j) => [t, s.records[j]]),
  }));
  const box = document.getElementById("volume");
  box.replaceChildren(series.length
    ? lineChart("records scored per minute", series, { yMin: 0, now: data.now })
    : el("p", { class: "empty" }, "No records yet."));
  const byService = new Map();
  const columns = ["ragpulse_records_received_total", "ragpulse_records_sampled_total", "ragpulse_records_scored_total"];
  columns.forEach((name, col) => {
    for (const row of counter(data, name)) {
      if (!byService.has(row.service)) byService.set(row.service, [0, 0, 0]);
      byService.get(row.service)[col] = row.value;
    }
  });
  const rows = [...byService].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([service, v]) =>
    el("tr", {}, nameEl("td", service), ...v.map((n) => el("td", { class: "num" }, Math.round(n)))));
  document.querySelector("#volume-table tbody").replaceChildren(...rows);
}

// The rows of one counter family in the summary (its names are ours, but read them like any key).
function counter(data, name) {
  return new Map(Object.entries(data.counters || {})).get(name) || [];
}

function renderFailures(data) {
  const rows = [];
  const add = (what, reason, value, bad) => {
    const tr = el("tr", {}, nameEl("td", what), nameEl("td", reason), el("td", { class: "num" }, Math.round(value)));
    if (bad && value > 0) tr.className = "alarm";
    rows.push(tr);
  };
  for (const r of counter(data, "ragpulse_judge_requests_total")) add(`judge ${r.judge}`, r.outcome, r.value, r.outcome !== "ok");
  for (const r of counter(data, "ragpulse_metric_failures_total")) add(`metric ${r.metric}`, r.reason, r.value, true);
  for (const r of counter(data, "ragpulse_records_dead_lettered_total")) add("dead-lettered", r.reason, r.value, true);
  for (const r of counter(data, "ragpulse_judge_cost_usd_total")) {
    rows.push(el("tr", {}, nameEl("td", `judge ${r.judge} cost`), el("td", {}, "USD"), el("td", { class: "num" }, fmt(r.value, 4))));
  }
  document.querySelector("#failures tbody").replaceChildren(
    ...(rows.length ? rows : [el("tr", {}, el("td", { colspan: 3, class: "empty" }, "No judge calls yet."))]));
  document.getElementById("queue").textContent =
    data.queue_depth === null ? "" : `Records waiting to be scored: ${Math.round(data.queue_depth)}`;
}

function renderDrift(data) {
  const rows = data.drift.map((d) => {
    let state;
    if (!d.armed) state = el("td", { class: "arming" }, `learning baseline (${d.samples}/${d.min_samples})`);
    else if (d.alarm) state = el("td", { class: "alarm" }, `ALARM: drifted ${d.direction}`);
    else state = el("td", { class: "okstate" }, "ok");
    const bar = el("span", { class: d.alarm ? "bar over" : "bar" }, el("span"));
    bar.firstChild.style.width = `${Math.min(100, (100 * d.statistic) / d.threshold).toFixed(0)}%`;
    const tr = el("tr", { "data-alarm": d.alarm ? "1" : "0" },
      nameEl("td", d.service), nameEl("td", d.metric), state,
      el("td", {}, bar, `${fmt(d.statistic, 1)} / ${fmt(d.threshold, 0)}`),
      el("td", { class: "num" }, d.armed ? fmt(d.baseline_mean) : "–"),
      el("td", { class: "num" }, `${fmt(d.current_mean)} (${fmt(d.current_lower)}–${fmt(d.current_upper)})`),
      el("td", { class: "num" }, d.samples));
    return tr;
  });
  document.querySelector("#drift tbody").replaceChildren(
    ...(rows.length ? rows : [el("tr", {}, el("td", { colspan: 7, class: "empty" }, "No scores yet."))]));
}

function renderLow(data) {
  document.getElementById("low-sub").textContent = `faithfulness below ${data.low_threshold}, newest first`;
  const items = data.low_records.map((r) => {
    const when = r.time_unix_nano ? new Date(r.time_unix_nano / 1e6).toLocaleTimeString() : "";
    const other = entriesOf(r.other).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(", ");
    // Each statement beside the context sentence the judge matched it to: why it scored low.
    const list = el("ul", {}, ...r.unsupported.map((s) => el("li", {}, s.statement,
      s.evidence ? el("div", { class: "meta evidence" }, `closest evidence: ${s.evidence}`) : "")));
    return el("div", { class: "record", "data-record-id": r.record_id },
      el("div", {}, el("span", { class: "score" }, `faithfulness ${fmt(r.faithfulness, 2)}`),
        ` · ${shortName(r.service)}${r.route ? " / " + shortName(r.route) : ""}${r.model ? " · " + shortName(r.model) : ""}`),
      el("div", { class: "meta" }, `${when} · record ${r.record_id}${other ? " · " + other : ""} · `
        + `${r.unsupported.length} of ${r.statements} statements unsupported`),
      list);
  });
  document.getElementById("low").replaceChildren(
    ...(items.length ? items : [el("p", { class: "empty" }, "None recently.")]));
}

async function refresh() {
  const status = document.getElementById("status");
  try {
    const response = await fetch("/api/summary", { cache: "no-store" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const data = await response.json();
    renderDrift(data);
    renderQuality(data);
    renderVolume(data);
    renderFailures(data);
    renderLow(data);
    const alarms = data.drift.filter((d) => d.alarm).length;
    status.textContent = `updated ${new Date(data.now * 1000).toLocaleTimeString()}` + (alarms ? ` · ${alarms} drift alarm(s)` : "");
    status.className = alarms ? "status error" : "status";
  } catch (err) {
    // Keep the last good view; say that it is stale (the scorer may be restarting).
    status.textContent = `cannot reach the scorer (${err.message}); retrying`;
    status.className = "status error";
  }
}

refresh();
setInterval(refresh, POLL_MS);
