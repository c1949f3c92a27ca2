// expkit ui: the pages' scripts. Every value from a run reaches the page through textContent, never innerHTML.
"use strict";
(function () {
  const POLL_MS = 2000; // live pages re-read their data every two seconds
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
  window.expkitCharts = {}; // metric -> uPlot instance (read by the browser tests)

  function el(tag, text, attrs) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }
  function fmt(v) {
    if (v === null || v === undefined) return "-";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }
  function pageData() {
    const node = document.getElementById("page-data");
    return node ? JSON.parse(node.textContent) : {};
  }
  async function getJSON(url) {
    const r = await fetch(url, { headers: { Accept: "application/json" } });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  }

  // ---- runs: sortable, filterable, paged on the server, new runs appear live --------------------------
  function runsPage() {
    const form = document.getElementById("runs-form");
    const table = document.getElementById("runs-table");
    let last = "";
    function params() {
      const p = new URLSearchParams();
      const f = new FormData(form);
      for (const [k, v] of f.entries()) {
        if (k === "where") String(v).split(/\s+/).filter(Boolean).forEach((w) => p.append("where", w));
        else if (v !== "") p.set(k, v);
      }
      return p;
    }
    function setField(name, value) { form.elements[name].value = value; }
    function header(key, label, page) {
      const th = el("th", label + (form.elements.sort.value === key ? (form.elements.desc.value === "1" ? " ▼" : " ▲") : ""));
      th.dataset.sort = key;
      th.title = "sort by " + label;
      th.addEventListener("click", () => {
        const same = form.elements.sort.value === key;
        setField("desc", same && form.elements.desc.value === "1" ? "0" : "1");
        setField("sort", key);
        setField("offset", "0");
        load();
      });
      return th;
    }
    function render(page) {
      const thead = table.tHead, tbody = table.tBodies[0];
      thead.replaceChildren();
      tbody.replaceChildren();
      const tr = el("tr");
      [["id", "id"], ["name", "name"], ["status", "status"], ["created", "created"], ["group", "group"], ["seed", "seed"]]
        .forEach(([k, l]) => tr.appendChild(header(k, l, page)));
      page.config_columns.forEach((k) => tr.appendChild(header("config." + k, k, page)));
      page.metric_columns.forEach((k) => tr.appendChild(header("metric." + k, k, page)));
      thead.appendChild(tr);
      for (const r of page.rows) {
        const row = el("tr", null, { "data-run": r.id });
        const idCell = el("td");
        idCell.appendChild(el("a", r.id, { href: "/run/" + encodeURIComponent(r.id) }));
        row.appendChild(idCell);
        row.appendChild(el("td", r.name || "-"));
        row.appendChild(el("td", r.status + (r.diverged ? " DIVERGED" : ""), { class: "status-" + r.status, title: r.status_reason || "" }));
        row.appendChild(el("td", (r.created_at || "").slice(0, 19)));
        row.appendChild(el("td", r.group || "-"));
        row.appendChild(el("td", fmt(r.seed)));
        page.config_columns.forEach((k) => row.appendChild(el("td", fmt(r.config[k]), { title: fmt(r.config[k]) })));
        page.metric_columns.forEach((k) => row.appendChild(el("td", fmt(r.metrics[k]))));
        tbody.appendChild(row);
      }
      const end = Math.min(page.offset + page.rows.length, page.total);
      document.getElementById("runs-summary").textContent =
        `${page.total} run(s)` + (page.total ? `, ${page.offset + 1}-${end} shown` : "") +
        (page.running ? `, ${page.running} running (live)` : "") + ` · store ${page.store}`;
      document.getElementById("prev").disabled = page.offset <= 0;
      document.getElementById("next").disabled = end >= page.total;
      const broken = document.getElementById("broken");
      broken.replaceChildren(...page.broken.map((b) => el("li", `broken run ${b.id}: ${b.error}`)));
    }
    async function load() {
      const p = params();
      history.replaceState(null, "", "/runs?" + p.toString());
      try {
        const page = await getJSON("/api/runs?" + p.toString());
        const key = JSON.stringify(page);
        if (key !== last) { last = key; render(page); }
      } catch (e) {
        document.getElementById("runs-summary").textContent = "error: " + e.message;
      }
    }
    form.addEventListener("submit", (ev) => { ev.preventDefault(); setField("offset", "0"); load(); });
    document.getElementById("prev").addEventListener("click", () => {
      setField("offset", String(Math.max(0, Number(form.elements.offset.value) - Number(form.elements.limit.value)))); load();
    });
    document.getElementById("next").addEventListener("click", () => {
      setField("offset", String(Number(form.elements.offset.value) + Number(form.elements.limit.value))); load();
    });
    load();
    setInterval(load, POLL_MS);
  }

  // ---- charts ------------------------------------------------------------------------------------------
  function chart(container, title, series, data) {
    const box = el("div", null, { class: "chart" });
    box.appendChild(el("h3", title));
    container.appendChild(box);
    const width = Math.max(320, Math.min(container.clientWidth || 900, 1100));
    return new uPlot({ width: width, height: 300, series: series, scales: { x: { time: false } } }, data, box);
  }

  function runPage() {
    const data = pageData();
    const charts = document.getElementById("charts");
    const notes = document.getElementById("curves-note");
    const known = new Set();
    async function loadMetric(metric) {
      const url = `/api/run/${encodeURIComponent(data.run)}/series?metric=${encodeURIComponent(metric)}`;
      const s = await getJSON(url);
      const plotData = [s.x, s.y];
      if (!window.expkitCharts[metric]) {
        window.expkitCharts[metric] = chart(charts, metric, [{ label: "step" }, { label: metric, stroke: COLORS[0], spanGaps: false }], plotData);
      } else if (window.expkitCharts[metric].data[0].length !== s.x.length || s.n_points !== window.expkitCharts[metric]._n) {
        window.expkitCharts[metric].setData(plotData);
      }
      window.expkitCharts[metric]._n = s.n_points;
      const status = document.getElementById("run-status");
      status.textContent = s.status;
      status.className = "status-" + s.status;
      let text = `${s.metrics.length} metric(s); ${metric}: ${s.n_points} point(s), ${s.n_shown} drawn (min-max per bucket, spikes kept)`;
      if (s.repeated_steps) text += `; ${s.repeated_steps} repeated step(s): the last value of each is shown`;
      if (s.other_rank_files.length) text += `; rank 0 shown, not ${s.other_rank_files.join(", ")}`;
      notes.textContent = text;
      for (const m of s.metrics) if (!known.has(m)) { known.add(m); await loadMetric(m); }
      return s.status;
    }
    async function refresh() {
      let status = "running";
      for (const m of Array.from(known)) status = await loadMetric(m);
      if (known.size === 0 && data.metrics.length === 0) {
        // nothing logged yet: ask for any metric to learn the names
        const s = await getJSON(`/api/run/${encodeURIComponent(data.run)}/series?metric=`);
        for (const m of s.metrics) if (!known.has(m)) { known.add(m); await loadMetric(m); }
        status = s.status;
      }
      if (status === "running") setTimeout(refresh, POLL_MS);
    }
    data.metrics.forEach((m) => known.add(m));
    refresh().catch((e) => { notes.textContent = "error: " + e.message; });
  }

  function comparePage() {
    const data = pageData();
    if (!data.metrics) return;
    const charts = document.getElementById("charts");
    data.metrics.forEach(async (metric) => {
      const p = new URLSearchParams({ a: data.a || "", metric: metric });
      if (data.b) p.set("b", data.b);
      if (data.by) p.set("by", data.by);
      const cs = await getJSON("/api/compare/curves?" + p.toString());
      const xs = Array.from(new Set(cs.bands.flatMap((b) => b.x))).sort((u, v) => u - v);
      const series = [{ label: "step" }], cols = [xs];
      cs.bands.forEach((b, i) => {
        const at = new Map(b.x.map((x, j) => [x, j]));
        const pick = (arr) => xs.map((x) => (arr && at.has(x) ? arr[at.get(x)] : null));
        const color = COLORS[i % COLORS.length];
        series.push({ label: `${b.group} mean (${b.n_seeds} seeds)`, stroke: color, width: 2 });
        cols.push(pick(b.mean));
        if (b.low) {
          series.push({ label: `${b.group} low`, stroke: color, dash: [4, 4], width: 1 });
          cols.push(pick(b.low));
          series.push({ label: `${b.group} high`, stroke: color, dash: [4, 4], width: 1 });
          cols.push(pick(b.high));
        }
      });
      window.expkitCharts[metric] = chart(charts, metric, series, cols);
    });
  }

  const page = document.body.dataset.page;
  if (page === "runs") runsPage();
  else if (page === "run") runPage();
  else if (page === "compare") comparePage();
})();
