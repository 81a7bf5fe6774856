// ragpulse live page: polls /api/summary and /api/records and draws them, and opens a record from
// /api/record (docs/live-page-api.md). Our own small SVG charts, no libraries.
// Record text is untrusted: it only ever reaches the page through textContent, never as markup.
// So are service, route, metric and reason names (they come from spans and labels): they are only
// ever Map keys, never keys of a plain object, where "toString" or "__proto__" would hit the
// prototype (a service named "toString" used to stop every refresh until the scorer restarted).
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const SERIES_COLORS = ["#1570ef", "#c4320a", "#079455", "#9e77ed", "#dc6803", "#0e9384", "#e31b54", "#475467"];
const POLL_MS = 5000;
const CHART_W = 420;
const CHART_H = 160;
const PAD = { left: 34, right: 8, top: 8, bottom: 20 };
// A name is shown up to this many characters (a 1 MB service name must not fill the page); the
// whole name is in the element's title.
const MAX_NAME = 120;
// Each metric's colour, which way is good and its bad-event threshold, by name: /api/summary's
// `metrics` (scorer/web/metric_styles.py), the one place they are kept. A name the last summary
// did not have yet (a record newer than it) is drawn grey and judged neither way.
let metricStyles = new Map();
const NO_STYLE = { color: "#475467", better: null, threshold: null };

function styleOf(metric) {
  return metricStyles.get(metric) || NO_STYLE;
}

// A score on the wrong side of its metric's threshold: below it where higher is better, above it
// where lower is (an aspect criterion whose "yes" is the bad answer).
function isBad(metric, value) {
  const { better, threshold } = styleOf(metric);
  if (value === null || value === undefined || threshold === null) return false;
  return better === "lower" ? value > threshold : better === "higher" && value < threshold;
}

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
    legend.append(el("span", {}, swatch, shortName(s.name) + (s.lowerIsBetter ? " (lower is better)" : "")));
  }
  fig.append(legend);
  return fig;
}

function renderQuality(data) {
  const box = document.getElementById("quality");
  const charts = [];
  for (const [service, s] of entriesOf(data.series)) {
    const series = entriesOf(s.mean).map(([metric, values]) => ({
      name: metric, color: styleOf(metric).color, lowerIsBetter: styleOf(metric).better === "lower",
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
    // A record being read stays as it is: a refresh must not close it under the reader.
    const open = openLow.get(r.record_id);
    if (open) return open;
    const when = r.time_unix_nano ? new Date(r.time_unix_nano / 1e6).toLocaleTimeString() : "";
    const other = entriesOf(r.other).map(([k, v]) => `${k} ${fmt(v, 2)}`).join(", ");
    // Each statement beside the context sentence the judge matched it to: why it scored low.
    const list = el("ul", {}, ...r.unsupported.map((s) => el("li", {}, s.statement,
      s.evidence ? el("div", { class: "meta evidence" }, `closest evidence: ${s.evidence}`) : "")));
    const node = el("div", { class: "record", "data-record-id": r.record_id },
      el("div", {}, el("span", { class: "score" }, `faithfulness ${fmt(r.faithfulness, 2)}`),
        ` · ${shortName(r.service)}${r.route ? " / " + shortName(r.route) : ""}${r.model ? " · " + shortName(r.model) : ""}`),
      el("div", { class: "meta" }, `${when} · record ${r.record_id}${other ? " · " + other : ""} · `
        + `${r.unsupported.length} of ${r.statements} statements unsupported`),
      list);
    node.append(drillDown(r.record_id, "open: question, contexts, verdicts, trace", openLow, node));
    return node;
  });
  document.getElementById("low").replaceChildren(
    ...(items.length ? items : [el("p", { class: "empty" }, "None recently.")]));
  forgetGone(openLow, data.low_records);
}

// ---- The drill-down: recent records, filtered, each opening to its text, verdicts and trace. ----

// Records open in each list, by record id: reused on refresh, so a record being read stays open.
const openLow = new Map();
const openRecords = new Map();
// The records filter; service, route and model are names as /api/records gives them.
const filters = { service: "", route: "", model: "", min: "", max: "", from: "", to: "" };
// Around an alert's time (?at=): the half-width of the window shown.
const AT_WINDOW_S = 1800;
let facetsShown = "";

// Seconds from a URL: Grafana's ${__from} and ${__to} are milliseconds, alerts' ?at= seconds.
function seconds(raw) {
  const n = Number(raw);
  if (raw === null || raw === "" || !Number.isFinite(n)) return "";
  return String(n > 1e11 ? Math.floor(n / 1000) : n);
}

function localInput(unixSeconds) {
  if (unixSeconds === "") return "";
  const d = new Date(Number(unixSeconds) * 1000);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function initFilters() {
  const params = new URLSearchParams(location.search);
  for (const name of ["service", "route", "model", "min", "max"]) filters[name] = params.get(name) || "";
  filters.from = seconds(params.get("from"));
  filters.to = seconds(params.get("to"));
  const at = seconds(params.get("at"));
  if (at !== "") {
    if (filters.from === "") filters.from = String(Number(at) - AT_WINDOW_S);
    if (filters.to === "") filters.to = String(Number(at) + AT_WINDOW_S);
  }
  const form = document.getElementById("filters");
  form.addEventListener("submit", (e) => e.preventDefault());
  form.addEventListener("change", () => {
    for (const name of ["service", "route", "model", "min", "max"]) filters[name] = form.elements[name].value;
    for (const name of ["from", "to"]) {
      const v = form.elements[name].value;
      filters[name] = v ? String(Math.floor(new Date(v).getTime() / 1000)) : "";
    }
    filtersChanged();
  });
  document.getElementById("clear-filters").addEventListener("click", () => {
    for (const name of Object.keys(filters)) filters[name] = "";
    filtersChanged();
  });
  showFilters();
  // Opened from an alert or a dashboard: the filtered records are what the reader came for.
  if ([...params.keys()].length) document.getElementById("records-section").scrollIntoView();
}

function filtersChanged() {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value !== "") params.set(name, value);
  history.replaceState(null, "", params.toString() ? `?${params}` : location.pathname);
  showFilters();
  refreshRecords();
}

function showFilters() {
  const form = document.getElementById("filters");
  for (const name of ["service", "route", "model", "min", "max"]) form.elements[name].value = filters[name];
  form.elements.from.value = localInput(filters.from);
  form.elements.to.value = localInput(filters.to);
}

// The filter's choices: the names among the recent records, and the chosen one even if it has none.
function showFacets(facets) {
  const key = JSON.stringify([facets, filters.service, filters.route, filters.model]);
  if (key === facetsShown) return;
  facetsShown = key;
  const form = document.getElementById("filters");
  for (const name of ["service", "route", "model"]) {
    const names = new Set(new Map(Object.entries(facets)).get(name) || []);
    if (filters[name]) names.add(filters[name]);
    form.elements[name].replaceChildren(el("option", { value: "" }, "any"),
      ...[...names].sort().map((n) => nameEl("option", n, { value: n })));
    form.elements[name].value = filters[name];
  }
}

async function refreshRecords() {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value !== "") params.set(name, value);
  const response = await fetch(`/api/records?${params}`, { cache: "no-store" });
  if (!response.ok) throw new Error(`records: HTTP ${response.status}`);
  const data = await response.json();
  showFacets(data.facets);
  document.getElementById("records-sub").textContent =
    `${data.matched} of the ${data.kept} most recent records match${data.matched > data.records.length ? `, ${data.records.length} shown` : ""}`;
  const items = data.records.map((r) => {
    const open = openRecords.get(r.record_id);
    if (open) return open;
    const when = r.time_unix_nano ? new Date(r.time_unix_nano / 1e6).toLocaleString() : "";
    const faith = new Map(Object.entries(r.scores)).get("faithfulness");
    // Faithfulness first: the score the list is read for.
    const scores = entriesOf(r.scores).sort(([a], [b]) => (b === "faithfulness") - (a === "faithfulness"))
      .map(([k, v]) => `${k} ${fmt(v, 2)}`).join(", ");
    const label = `${when} · ${shortName(r.service)}${r.route ? " / " + shortName(r.route) : ""}`
      + `${r.model ? " · " + shortName(r.model) : ""} · ${scores}`;
    const node = drillDown(r.record_id, label, openRecords);
    node.classList.add("rec");
    node.classList.remove("drill");
    if (isBad("faithfulness", faith)) node.dataset.low = "1";
    return node;
  });
  document.getElementById("records").replaceChildren(
    ...(items.length ? items : [el("p", { class: "empty" }, "No recent record matches.")]));
  forgetGone(openRecords, data.records);
}

// An open record that left its list is dropped with it.
function forgetGone(open, records) {
  const ids = new Set(records.map((r) => r.record_id));
  for (const id of [...open.keys()]) if (!ids.has(id)) open.delete(id);
}

// A record that opens to its detail, fetched when opened. `open` keeps it while it is open;
// `keep` (default: the details element itself) is what a refresh reuses.
function drillDown(recordId, label, open, keep) {
  const node = el("details", { class: "drill", "data-record-id": recordId }, el("summary", {}, label));
  node.addEventListener("toggle", async () => {
    if (!node.open) { open.delete(recordId); return; }
    open.set(recordId, keep || node);
    if (node.querySelector(".drill-body")) return;
    const body = el("div", { class: "drill-body" }, el("p", { class: "empty" }, "loading…"));
    node.append(body);
    try {
      const response = await fetch(`/api/record?id=${encodeURIComponent(recordId)}`, { cache: "no-store" });
      if (!response.ok) throw new Error(response.status === 404 ? "no longer among the recent records" : `HTTP ${response.status}`);
      body.replaceChildren(...recordDetail(await response.json()));
    } catch (err) {
      body.replaceChildren(el("p", { class: "empty" }, `cannot open the record: ${err.message}`));
    }
  });
  return node;
}

function verdictEl(v) {
  const ok = v !== null && v !== undefined && v >= 0.5;
  return el("span", { class: ok ? "verdict supported" : "verdict unsupported" }, `${ok ? "✓ supported" : "✗ unsupported"} ${fmt(v, 2)}`);
}

// A context's text with the sentences the statements were matched to marked, each mark numbered
// after its statements (one sentence can be the evidence of several). Evidence may end in "…" (cut
// by the scorer): its kept part is looked for.
function markedContext(text, statements) {
  const byRange = new Map();
  statements.forEach((s, i) => {
    const needle = String(s.evidence || "").replace(/…$/, "");
    const at = needle ? text.indexOf(needle) : -1;
    if (at < 0) return;
    const key = `${at}:${at + needle.length}`;
    if (!byRange.has(key)) byRange.set(key, { start: at, end: at + needle.length, n: [], ok: false });
    const r = byRange.get(key);
    r.n.push(i + 1);
    r.ok = r.ok || s.verdict >= 0.5;
  });
  const ranges = [...byRange.values()].sort((a, b) => a.start - b.start);
  const nodes = [];
  let pos = 0;
  for (const r of ranges) {
    if (r.start < pos) continue; // overlapping sentences: the first one's mark stands
    nodes.push(text.slice(pos, r.start));
    nodes.push(el("mark", { class: r.ok ? "ev supported" : "ev unsupported", "data-n": r.n.join(","),
      title: `statement ${r.n.join(", ")}: ${r.ok ? "supported here" : "unsupported, closest evidence"}` },
    text.slice(r.start, r.end)));
    pos = r.end;
  }
  nodes.push(text.slice(pos));
  return nodes;
}

function recordDetail(d) {
  const metrics = entriesOf(d.metrics);
  const faith = new Map(metrics).get("faithfulness") || {};
  const statements = ((faith.detail || {}).statements || []).filter((s) => s && typeof s === "object");
  // With the cascade, the offline judge's view of a record the expensive judge also saw: beside each
  // verdict, and in place of one the expensive judge failed on, marked as the offline judge's.
  const offline = new Map(entriesOf((d.offline || {}).metrics));
  const scores = el("div", { class: "scores" }, ...metrics.map(([name, m]) => {
    const off = offline.get(name);
    const offValue = off && off.value !== null && off.value !== undefined ? off.value : null;
    if (m.value === null && offValue !== null) {
      return el("span", { class: `fallback${isBad(name, offValue) ? " low" : ""}`, "data-metric": name, "data-judge": off.judge },
        `${name} ${fmt(offValue, 3)} (offline judge ${off.judge}: ${m.judge} failed, ${m.error || "no score"})`);
    }
    const text = m.value === null ? `${name}: failed (${m.error || "no score"})` : `${name} ${fmt(m.value, 3)}`;
    const beside = off ? ` (${m.judge}; offline ${offValue === null ? "failed" : fmt(offValue, 3)})` : "";
    return el("span", { class: isBad(name, m.value) ? "low" : "", "data-metric": name, "data-judge": m.judge || "" },
      text + beside);
  }));
  const judge = d.judge ? `judge ${d.judge.name}${d.judge.model ? " (" + d.judge.model + ")" : ""}` : "";
  const when = d.time_unix_nano ? new Date(d.time_unix_nano / 1e6).toLocaleString() : "";
  const meta = el("div", { class: "meta" }, `${when} · ${judge} · scored in ${fmt(d.latency_s, 2)} s · record ${d.record_id} · `);
  if (d.trace_url) {
    meta.append(el("a", { href: d.trace_url, target: "_blank", rel: "noopener noreferrer", class: "trace-link" }, "open the trace"));
  } else {
    meta.append(`trace ${d.trace_id} (set page.trace_url to link it)`);
  }
  const out = [scores, meta];
  const list = el("ol", { class: "statements" }, ...statements.map((s) => el("li", {}, verdictEl(s.verdict), " ", String(s.statement || ""),
    s.evidence ? el("div", { class: "meta evidence" }, `${s.verdict >= 0.5 ? "evidence" : "closest evidence"}: ${s.evidence}`) : "")));
  if (d.text === null) {
    out.push(el("p", { class: "empty" }, "The text of this record is no longer kept (page.text_records, page.text_bytes); its verdicts are."));
    if (statements.length) out.push(el("h3", {}, "Statements of the answer"), list);
    return out;
  }
  out.push(el("h3", {}, "Question"), el("p", { class: "question" }, d.text.question));
  out.push(el("h3", {}, `Contexts (${d.text.contexts.length})`),
    el("ol", { class: "contexts" }, ...d.text.contexts.map((c) => el("li", {}, ...markedContext(c, statements)))));
  out.push(el("h3", {}, "Answer"), el("p", { class: "answer" }, d.text.answer));
  if (statements.length) out.push(el("h3", {}, `Statements of the answer (faithfulness ${fmt(faith.value, 2)})`), list);
  return out;
}

async function refresh() {
  const status = document.getElementById("status");
  try {
    const response = await fetch("/api/summary", { cache: "no-store" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const data = await response.json();
    metricStyles = new Map(Object.entries(data.metrics || {}));
    renderDrift(data);
    renderQuality(data);
    renderVolume(data);
    renderFailures(data);
    renderLow(data);
    await refreshRecords();
    const alarms = data.drift.filter((d) => d.alarm).length;
    status.textContent = `updated ${new Date(data.now * 1000).toLocaleTimeString()}` + (alarms ? ` · ${alarms} drift alarm(s)` : "");
    status.className = alarms ? "status error" : "status";
  } catch (err) {
    // Keep the last good view; say that it is stale (the scorer may be restarting).
    status.textContent = `cannot reach the scorer (${err.message}); retrying`;
    status.className = "status error";
  }
}

initFilters();
refresh();
setInterval(refresh, POLL_MS);
