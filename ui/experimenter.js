// Experimenter dashboard: studies and their progress, live sessions (server-sent events every
// second: levels and link quality), and the session list with links to the review page.
"use strict";
const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) { if (k === "class") e.className = v; else e.setAttribute(k, v); }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// The session's CSRF token: every state-changing request carries it (the server refuses one
// without it, so a page of another site cannot act with this browser's cookie).
let csrfToken = "";
async function csrf() {
  if (!csrfToken) csrfToken = (await getJSON("/api/x/me")).csrf_token;
  return csrfToken;
}

async function getJSON(url) {
  const res = await fetch(url);
  if (res.status === 401) { location.href = "/x/login"; throw new Error("signed out"); }
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

function fail(e) { $("error").hidden = false; $("error").textContent = String(e.message || e); }

function mmss(ms) { const s = Math.floor(ms / 1000); return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`; }

function levelBar(dbfs) {
  const pct = Math.max(0, Math.min(100, (dbfs + 60) / 60 * 100));
  return el("span", { class: "level", title: `${dbfs.toFixed(1)} dBFS` }, el("div", { style: `width:${pct}%` }));
}

// renderLive updates the live table in place: a row per session, kept while the session runs, so
// the links in it keep keyboard focus through the updates every second.
function renderLive(list) {
  $("live-count").textContent = list.length;
  const tb = $("live").querySelector("tbody");
  const keep = new Set(list.map((l) => l.session));
  for (const tr of [...tb.rows]) if (!keep.has(tr.dataset.session)) tr.remove();
  for (const l of list) {
    let tr = tb.querySelector(`tr[data-session="${CSS.escape(l.session)}"]`);
    if (!tr) {
      tr = el("tr", { "data-session": l.session });
      for (let i = 0; i < 14; i++) tr.append(el("td"));
      tr.cells[0].append(el("a", { href: `/x/session/${l.session}` }, l.session));
      tr.cells[13].append(el("a", { href: `/x/session/${l.session}#live`, class: "button", "aria-label": `Listen to ${l.session}` }, "Listen"));
      tb.append(tr);
    }
    const cells = [null, l.participant ? `#${l.participant}` : "synthetic",
      el("span", { class: "pill " + (l.participant_connected ? "ok" : "bad") }, l.participant_connected ? "connected" : "not connected"),
      l.task, `${l.system} (${l.alias})`, mmss(l.elapsed_ms), levelBar(l.caller_dbfs), levelBar(l.agent_dbfs),
      `${l.packets_lost}/${l.packets_received}`, `${l.jitter_ms.toFixed(1)} ms`, `${l.rtt_ms.toFixed(1)} ms`, `${l.late_ticks} of ${l.ticks}`, l.cues];
    cells.forEach((c, i) => { if (c !== null) tr.cells[i].replaceChildren(c); });
    tr.cells[11].title = `${l.late_ticks} of ${l.ticks} ticks started more than ${l.late_threshold_ms} ms late`;
  }
}

function renderStudies(studies) {
  const tb = $("studies").querySelector("tbody");
  const sel = $("filter-study");
  tb.replaceChildren(...(studies || []).map((s) => {
    const p = s.progress.Study || {};
    const total = (p.Done || 0) + (p.Running || 0) + (p.Excluded || 0) + (p.Pending || 0);
    const w = (n) => `width:${total ? (100 * n / total) : 0}%`;
    return el("tr", {}, el("td", {}, `${s.name} (${s.id})`), el("td", {}, p.Done || 0), el("td", {}, p.Running || 0),
      el("td", {}, p.Excluded || 0), el("td", {}, p.Pending || 0),
      el("td", {}, el("div", { class: "bar-progress" }, el("div", { class: "done", style: w(p.Done || 0) }),
        el("div", { class: "running", style: w(p.Running || 0) }), el("div", { class: "excluded", style: w(p.Excluded || 0) }))));
  }));
  const cur = sel.value;
  sel.replaceChildren(el("option", { value: "" }, "all"), ...(studies || []).map((s) => el("option", { value: s.id }, s.id)));
  sel.value = cur;
}

async function loadSessions() {
  const q = new URLSearchParams({ study: $("filter-study").value, mode: $("filter-mode").value });
  const list = await getJSON(`/api/x/sessions?${q}`);
  const tb = $("sessions").querySelector("tbody");
  tb.replaceChildren(...(list || []).slice().reverse().map((s) => el("tr", {},
    el("td", {}, el("a", { href: `/x/session/${s.ID}` }, s.ID)), el("td", {}, s.Mode), el("td", {}, s.TaskID),
    el("td", {}, `${s.System}${s.Alias ? " (" + s.Alias + ")" : ""}`), el("td", {}, s.Status), el("td", {}, s.EndReason || ""),
    el("td", {}, s.Score ? (s.Score.WS ? "1" : "0") : "–"), el("td", {}, s.Score && s.Score.AFA != null ? s.Score.AFA.toFixed(2) : "–"),
    el("td", {}, s.Exclusion ? s.Exclusion.Reason : ""))));
}

async function load() {
  try {
    const ov = await getJSON("/api/x/overview");
    renderStudies(ov.studies);
    renderLive(ov.live || []);
    await loadSessions();
  } catch (e) { fail(e); }
}

$("plan-go").onclick = async () => {
  $("plan-report").hidden = false;
  $("plan-download").hidden = true;
  try {
    const body = { tasks: $("plan-tasks").value, anchor: $("plan-anchor").value, systems: $("plan-systems").value,
      k: Number($("plan-k").value), seed: Number($("plan-seed").value) };
    const res = await fetch("/api/x/plan", { method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": await csrf() }, body: JSON.stringify(body) });
    const out = await res.json();
    if (!res.ok) { $("plan-report").textContent = out.error; return; }
    $("plan-report").textContent = out.report;
    $("plan-download").href = URL.createObjectURL(new Blob([out.csv], { type: "text/csv" }));
    $("plan-download").hidden = false;
  } catch (e) { fail(e); }
};
$("filter-study").onchange = () => loadSessions().catch(fail);
$("filter-mode").onchange = () => loadSessions().catch(fail);
load();
const es = new EventSource("/api/x/live");
let lastCount = -1;
es.addEventListener("live", (m) => {
  const list = JSON.parse(m.data) || [];
  renderLive(list);
  if (list.length !== lastCount) { lastCount = list.length; loadSessions().catch(fail); }
});
setInterval(() => load(), 15000);
