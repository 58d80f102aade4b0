// The live metrics page (console/live_views.py, SPEC R-OBS-2): fetches the window's
// series from #live's data-url, draws one uPlot chart per .chart[data-metric] (a line per
// provider or endpoint, times in UTC), rewrites the totals table, and fetches again every
// data-refresh-s seconds while the tab is visible — never reloading the page. No inline
// script or style (the CSP forbids both): uPlot sizes its own elements from here, which
// the CSP allows. A failed refresh says so in #live-status and tries again.
"use strict";
(() => {
  const controls = document.querySelector("form[data-live-controls]");
  if (controls) controls.addEventListener("change", () => controls.requestSubmit());
  const root = document.getElementById("live");
  if (!root || typeof uPlot === "undefined") return;

  // console.css's factor colours first, then more: a series keeps its colour while the
  // set of names stays the same (they come sorted by name).
  const COLORS = ["#2f5bd3", "#1f9d8a", "#d08b1e", "#8b52c6", "#c2457a", "#5c6475",
                  "#3f8f2f", "#b3261e", "#0f6c99", "#946200"];
  const HEIGHT = 200; // px of plot; the legend goes below
  // y ticks of counts and milliseconds are whole numbers: no "0.75 ms"
  const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5,
                       2e5, 5e5, 1e6];
  // The totals table's columns after the name, as live_views._shown formats them.
  const COLUMNS = [["requests", "count"], ["share", "percent"], ["error_rate", "percent"],
                   ["p50", "ms"], ["p90", "ms"], ["p99", "ms"], ["ttft_p50", "ms"]];
  const FORMATS = {
    count: (v) => String(v),
    percent: (v) => `${(100 * v).toFixed(1)} %`,
    ms: (v) => `${Math.round(v)} ms`,
  };
  const refreshMs = 1000 * Number(root.dataset.refreshS || 10);
  const status = document.getElementById("live-status");
  const charts = new Map(); // chart element -> {key: its series' names, plot}
  let timer = null;
  let busy = false;

  const shown = (value, unit) => (value == null ? "—" : FORMATS[unit](value));
  const utc = (epochS) => new Date(epochS * 1000).toISOString().slice(0, 19).replace("T", " ");
  const widthOf = (element) => Math.max(element.clientWidth, 240);

  // An x tick: the time of day in UTC, 24-hour; the date instead at midnight.
  function clock(epochS) {
    const time = utc(epochS);
    return time.endsWith("00:00:00") ? time.slice(5, 10) : time.slice(11, 16);
  }

  function tick(value, unit) {
    if (unit === "percent") return `${+(100 * value).toFixed(1)} %`;
    return unit === "ms" ? `${value} ms` : String(value);
  }

  function top(max, unit) {
    if (unit === "percent") return max > 0 ? Math.min(1, max * 1.15) : 1;
    return max > 0 ? max * 1.1 : 1;
  }

  function options(element, groups) {
    const unit = element.dataset.unit;
    const yAxis = { size: 70, values: (u, ticks) => ticks.map((v) => tick(v, unit)) };
    if (unit !== "percent") yAxis.incrs = WHOLE_STEPS;
    return {
      width: widthOf(element),
      height: HEIGHT,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
      scales: { y: { range: (u, min, max) => [0, top(max, unit)] } },
      axes: [{ size: 34, values: (u, ticks) => ticks.map(clock) }, yAxis],
      series: [
        { label: "Time (UTC)", value: (u, ts) => (ts == null ? "—" : utc(ts).slice(5, 16)) },
        ...groups.map((name, i) => ({
          label: name,
          stroke: COLORS[i % COLORS.length],
          width: 2,
          points: { show: true, size: 5 }, // a lone bucket between gaps is still seen
          value: (u, v) => shown(v, unit),
        })),
      ],
    };
  }

  function drawCharts(data) {
    const key = data.groups.join("\u0000");
    for (const element of root.querySelectorAll(".chart[data-metric]")) {
      const metric = element.dataset.metric;
      const values = [data.buckets, ...data.groups.map((name) => data.series[name][metric])];
      const held = charts.get(element);
      if (held && held.key === key) {
        held.plot.setData(values);
        continue;
      }
      if (held) held.plot.destroy();
      charts.set(element, { key, plot: new uPlot(options(element, data.groups), values, element) });
    }
  }

  function tableRow(name, summary, cell) {
    const row = document.createElement("tr");
    const first = document.createElement(cell);
    first.textContent = name;
    row.append(first);
    for (const [column, unit] of COLUMNS) {
      const td = document.createElement("td");
      td.className = "num";
      td.textContent = shown(summary[column], unit);
      row.append(td);
    }
    return row;
  }

  function drawTable(data) {
    const rows = data.groups.map((name) => tableRow(name, data.totals[name], "td"));
    if (rows.length === 0) {
      const empty = document.createElement("td");
      empty.colSpan = COLUMNS.length + 1;
      empty.className = "empty";
      empty.textContent = "No requests in this window.";
      rows.push(document.createElement("tr"));
      rows[0].append(empty);
    }
    document.getElementById("live-rows").replaceChildren(...rows);
    document.getElementById("live-overall").replaceChildren(tableRow("All", data.overall, "th"));
    document.getElementById("live-capped").hidden = !data.capped;
    document.getElementById("live-complete-from").textContent = utc(data.complete_from);
  }

  function say(text, failed) {
    status.textContent = text;
    status.classList.toggle("failed", failed);
  }

  async function refresh() {
    if (busy) return;
    busy = true;
    clearTimeout(timer);
    let again = true;
    try {
      const response = await fetch(root.dataset.url, {
        credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" },
      });
      if (!(response.headers.get("Content-Type") || "").startsWith("application/json")) {
        again = false; // sent to the sign-in page: the session is over
        say("Signed out: reload the page and sign in to see live numbers again.", true);
        return;
      }
      const data = await response.json();
      if (!response.ok) throw new Error(data.error ? data.error.message : `HTTP ${response.status}`);
      drawCharts(data);
      drawTable(data);
      say(`Updated ${utc(Date.now() / 1000).slice(11)} UTC: ${data.rows} requests in the last ` +
          `${data.window}, by ${data.by}. Refreshes every ${refreshMs / 1000} s.`,
          false);
    } catch (error) {
      say(`Refresh failed (${error.message}); trying again in ${refreshMs / 1000} s.`, true);
    } finally {
      busy = false;
      if (again) schedule();
    }
  }

  function schedule() {
    clearTimeout(timer);
    if (!document.hidden) timer = setTimeout(refresh, refreshMs);
  }

  document.addEventListener("visibilitychange", () => {
    if (document.hidden) clearTimeout(timer);
    else refresh(); // back on the tab: catch up at once
  });
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      for (const [element, held] of charts) held.plot.setSize({ width: widthOf(element), height: HEIGHT });
    }, 150);
  });
  refresh();
})();
