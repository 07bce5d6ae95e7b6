// The dashboard's script: fetches /stats once a second and redraws the tiles, the charts (from the
// server's own five-minute history, so a page opened late still shows the past) and the table.
"use strict";

const key = new URLSearchParams(location.hash.slice(1)).get("key");
const headers = key ? { Authorization: "Bearer " + key } : {};
const charts = {};
let polls = 0;

function fmt(v, digits) {
  return v === null || v === undefined ? "-" : Number(v).toFixed(digits);
}

function lineChart(id, title, series, yOptions) {
  const ctx = document.getElementById(id);
  charts[id] = new Chart(ctx, {
    type: "line",
    data: { labels: [], datasets: series.map((s) => ({ label: s.label, data: [], borderColor: s.color,
      backgroundColor: s.color, pointRadius: 0, borderWidth: 2, spanGaps: true, yAxisID: s.axis || "y" })) },
    options: { animation: false, maintainAspectRatio: false,
      plugins: { title: { display: true, text: title } },
      scales: Object.assign({ x: { ticks: { maxTicksLimit: 6 } } }, yOptions) },
  });
}

function setup() {
  lineChart("chart-throughput", "Throughput (tok/s)", [
    { label: "decode", color: "#2f6fdf" }, { label: "prefill", color: "#e0823a" }],
    { y: { beginAtZero: true } });
  lineChart("chart-latency", "Latency p50, last 10 s (s)", [
    { label: "TTFT", color: "#9c3fd0" }, { label: "TPOT", color: "#1e9d6b" }],
    { y: { beginAtZero: true } });
  lineChart("chart-requests", "Requests", [
    { label: "running", color: "#2f6fdf" }, { label: "waiting", color: "#d33b3b" }],
    { y: { beginAtZero: true, ticks: { precision: 0 } } });
  lineChart("chart-kv", "KV pool used and cache hit rate (%)", [
    { label: "KV used", color: "#e0823a" }, { label: "cache hit", color: "#1e9d6b" }],
    { y: { min: 0, max: 100 } });
  charts["chart-tiers"] = new Chart(document.getElementById("chart-tiers"), {
    type: "bar",
    data: { labels: [], datasets: [
      { label: "held MiB", data: [], backgroundColor: "#2f6fdf" },
      { label: "budget MiB", data: [], backgroundColor: "#c7d3ea" }] },
    options: { animation: false, maintainAspectRatio: false,
      plugins: { title: { display: true, text: "Prompt cache tiers" } } },
  });
}

function draw(s) {
  const time = s.history.map((h) => new Date(h.time * 1000).toLocaleTimeString());
  const put = (id, ...columns) => {
    const c = charts[id];
    c.data.labels = time;
    columns.forEach((col, i) => { c.data.datasets[i].data = col; });
    c.update();
  };
  const pct = (v) => (v === null ? null : 100 * v);
  put("chart-throughput", s.history.map((h) => h.decode_tps), s.history.map((h) => h.prefill_tps));
  put("chart-latency", s.history.map((h) => h.ttft_p50), s.history.map((h) => h.tpot_p50));
  put("chart-requests", s.history.map((h) => h.running), s.history.map((h) => h.waiting));
  put("chart-kv", s.history.map((h) => pct(h.kv_usage)), s.history.map((h) => pct(h.cache_hit_rate)));
  const tiers = charts["chart-tiers"];
  tiers.data.labels = s.prompt_cache.tiers.map((t) => t.tier);
  tiers.data.datasets[0].data = s.prompt_cache.tiers.map((t) => t.bytes / 1048576);
  tiers.data.datasets[1].data = s.prompt_cache.tiers.map((t) => t.budget_bytes / 1048576);
  tiers.update();
}

function tiles(s) {
  const set = (id, text) => { document.getElementById(id).textContent = text; };
  const f = s.requests.finished;
  set("model", s.model + " (" + s.backend + ")");
  set("stat-running", s.requests.running);
  set("stat-waiting", s.requests.waiting);
  set("stat-decode", fmt(s.throughput.decode_tokens_per_second, 1));
  set("stat-prefill", fmt(s.throughput.prefill_tokens_per_second, 1));
  set("stat-kv", fmt(100 * s.kv_cache.usage, 1) + "%");
  set("stat-hit", s.prompt_cache.hit_rate === null ? "-" : fmt(100 * s.prompt_cache.hit_rate, 1) + "%");
  set("stat-ttft", fmt(s.latency.ttft_seconds.p50, 3) + " / " + fmt(s.latency.ttft_seconds.p99, 3));
  set("stat-tpot", fmt(s.latency.tpot_seconds.p50, 4) + " / " + fmt(s.latency.tpot_seconds.p99, 4));
  set("stat-finished", f.stop + f.length + f.abort + f.error);
  set("stat-memory", fmt(s.memory.resident_bytes / 1048576, 0) + " MiB");
}

// A table row of text cells.
function row(values) {
  const tr = document.createElement("tr");
  for (const v of values) {
    const td = document.createElement("td");
    td.textContent = v;
    tr.appendChild(td);
  }
  return tr;
}

function table(s) {
  const body = document.querySelector("#recent tbody");
  body.replaceChildren(...s.recent_requests.slice(0, 20).map((r) => row([r.id, r.route,
    r.key || "", r.status, r.finish_reason || "", r.prompt_tokens, r.cached_tokens,
    r.completion_tokens, fmt(r.ttft, 3), fmt(r.e2e, 3)])));
}

// The prompt cache's most recently used conversations, each with the tiers holding it.
function states(s) {
  const byKey = new Map();
  for (const t of s.prompt_cache.tiers) {
    for (const st of t.states) {
      if (!byKey.has(st.key)) byKey.set(st.key, { ...st, tiers: [] });
      byKey.get(st.key).tiers.push(t.tier);
    }
  }
  const rows = [...byKey.values()].sort((a, b) => b.used_at - a.used_at).slice(0, 20);
  document.querySelector("#states tbody").replaceChildren(...rows.map((st) => row([
    st.key.slice(0, 12), st.tokens, fmt(s.time - st.used_at, 1), st.tiers.join(", ")])));
}

async function poll() {
  try {
    const resp = await fetch("/stats", { headers, cache: "no-store" });
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    const s = await resp.json();
    tiles(s);
    draw(s);
    table(s);
    states(s);
    polls += 1;
    document.body.dataset.polls = polls;
    document.getElementById("status").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    document.getElementById("status").textContent = "error: " + e.message;
  }
}

setup();
poll();
setInterval(poll, 1000);
