// Session review: the stereo waveform (caller and agent lanes) with the event and cue timeline
// under it on the same media clock, the recording, the artifact as committed, the four gates and
// the field results with gold beside the agent's values, and marking an exclusion.
"use strict";
const $ = (id) => document.getElementById(id);
const sid = location.pathname.split("/").filter(Boolean).pop();

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) { if (k === "class") e.className = v; else e.setAttribute(k, v); }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}
// The session's CSRF token, sent on every state-changing request (see experimenter.js).
let csrfToken = "";
async function csrf() {
  if (!csrfToken) csrfToken = (await getJSON("/api/x/me")).csrf_token;
  return csrfToken;
}
async function getJSON(url, opts) {
  const res = await fetch(url, opts);
  if (res.status === 401) { location.href = "/x/login"; throw new Error("signed out"); }
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}
function fail(e) { $("error").hidden = false; $("error").textContent = String(e.message || e); }
const fmt = (ms) => `${Math.floor(ms / 60000)}:${String(Math.floor(ms / 1000) % 60).padStart(2, "0")}.${String(Math.floor(ms % 1000)).padStart(3, "0")}`;
const show = (v) => (v === null || v === undefined ? "—" : typeof v === "string" ? v : JSON.stringify(v));

let durationMS = 1, peaks = null, events = [];

function colorOf(t) {
  if (t.startsWith("cue.")) return "#d19a00";
  if (t === "tool.call") return "#6a3fb5";
  if (t === "auth.commit_blocked" || t === "media.barge_in" || t === "agent.error" || t === "session.exclusion") return "#b3261e";
  if (t.startsWith("auth.")) return "#1e7b3a";
  return null;
}

function drawWave(playMS) {
  const c = $("wave"), g = c.getContext("2d");
  const W = c.width, H = c.height;
  g.clearRect(0, 0, W, H);
  const lanes = [["caller", "#2457c5", H * 0.25], ["agent", "#b35c00", H * 0.75]];
  for (const [name, color, mid] of lanes) {
    g.fillStyle = "#666"; g.font = "12px sans-serif"; g.fillText(name, 4, mid - H * 0.2);
    if (!peaks) continue;
    const arr = peaks[name], n = arr.length / 2;
    g.fillStyle = color;
    for (let i = 0; i < n; i++) {
      const x = (i / n) * W, lo = arr[2 * i], hi = arr[2 * i + 1];
      g.fillRect(x, mid - hi * H * 0.22, Math.max(1, W / n), Math.max(1, (hi - lo) * H * 0.22));
    }
  }
  g.strokeStyle = "#ccc"; g.beginPath(); g.moveTo(0, H / 2); g.lineTo(W, H / 2); g.stroke();
  for (const e of events) {
    const col = colorOf(e.type);
    if (!col || !e.type.startsWith("cue.")) continue;
    const x = (e.t_ms / durationMS) * W;
    g.strokeStyle = col; g.beginPath(); g.moveTo(x, 0); g.lineTo(x, H); g.stroke();
  }
  if (playMS !== undefined) {
    const x = (playMS / durationMS) * W;
    g.strokeStyle = "#000"; g.lineWidth = 2; g.beginPath(); g.moveTo(x, 0); g.lineTo(x, H); g.stroke(); g.lineWidth = 1;
  }
}

function drawTimeline() {
  const c = $("timeline"), g = c.getContext("2d");
  const W = c.width, H = c.height;
  g.clearRect(0, 0, W, H);
  const rows = { "caller speech": 12, "agent speech": 30, "cues": 52, "tools": 72, "auth": 92, "other": 110 };
  g.font = "11px sans-serif"; g.fillStyle = "#666";
  for (const [name, y] of Object.entries(rows)) g.fillText(name, 4, y + 4);
  const spans = (start, end, y, color) => {
    let open = null;
    for (const e of events) {
      if (e.type === start) open = e.t_ms;
      if (e.type === end && open !== null) {
        g.fillStyle = color; g.fillRect(90 + (open / durationMS) * (W - 90), y - 5, Math.max(2, ((e.t_ms - open) / durationMS) * (W - 90)), 10);
        open = null;
      }
    }
  };
  spans("caller.speech_start", "caller.speech_end", rows["caller speech"], "#2457c5");
  spans("agent.speech_start", "agent.speech_end", rows["agent speech"], "#b35c00");
  for (const e of events) {
    const col = colorOf(e.type);
    if (!col) continue;
    const y = e.type.startsWith("cue.") ? rows.cues : e.type === "tool.call" ? rows.tools : e.type.startsWith("auth.") ? rows.auth : rows.other;
    const x = 90 + (e.t_ms / durationMS) * (W - 90);
    g.fillStyle = col;
    g.beginPath(); g.arc(x, y, e.type === "cue.issued" ? 5 : 4, 0, 2 * Math.PI); g.fill();
  }
}

function detail(e) {
  const parts = [];
  if (e.text) parts.push(e.text);
  if (e.plan) parts.push(`plan ${e.plan.id}`);
  if (e.act) parts.push(`act ${e.act}`);
  if (e.tool) parts.push(`${e.tool}${e.args ? " " + JSON.stringify(e.args) : ""}`);
  if (e.type === "tool.result") parts.push(e.ok ? "ok" : `error ${e.error}`);
  if (e.field) parts.push(`${e.field} = ${JSON.stringify(e.value)}`);
  if (e.state) parts.push(`${e.from || ""} → ${e.state}`);
  if (e.action) parts.push(`action ${e.action}${e.token ? " token " + e.token : ""}`);
  if (e.cue_id) parts.push(`cue ${e.cue_id}`);
  if (e.ref_ms) parts.push(`ref ${fmt(e.ref_ms)}`);
  if (e.dropped_ms) parts.push(`dropped ${e.dropped_ms} ms`);
  if (e.duration_ms) parts.push(`${e.duration_ms} ms`);
  if (e.type === "cue.spoken") {
    if (!e.ref_ms) { /* the text says there was no speech */ } else if (e.ok === undefined) parts.push(`caller spoke at ${fmt(e.ref_ms)} (words not recognised)`);
    else parts.push(e.ok ? `caller said it at ${fmt(e.ref_ms)}` : `caller spoke at ${fmt(e.ref_ms)} without the cued ${(e.meta && e.meta.carries) || "content"}`);
  }
  if (e.type === "cue.applied") parts.push(e.ok ? "agent applied it" : "agent did not apply it");
  // Traces recorded before cue.spoken and cue.applied carry one outcome.
  if (e.type === "cue.acted") parts.push(e.ok ? "workspace changed as cued" : "workspace did not change as cued");
  if (e.type === "auth.approval_unclear") parts.push(`unclear answer, no token: listen to ${fmt(e.ref_ms || e.t_ms)}–${fmt((e.ref_ms || e.t_ms) + (e.duration_ms || 0))}`);
  if (e.source === "caller_speech" && e.meta && e.meta.confidence) parts.push(`read from the caller's words (confidence ${e.meta.confidence})`);
  if (e.meta && (e.type === "session.start" || e.type === "media.stats" || e.type === "agent.usage")) parts.push(JSON.stringify(e.meta));
  return parts.join(" · ");
}

function renderEvents() {
  const tb = $("events").querySelector("tbody");
  tb.replaceChildren(...events.map((e) => el("tr", {
    class: e.type.startsWith("cue.") ? "cue" : e.type === "auth.commit_blocked" || e.type === "auth.approval_unclear" || e.type === "agent.error" ? "bad" : e.type.startsWith("auth.") ? "auth" : "",
  }, el("td", { class: "mono" }, fmt(e.t_ms)), el("td", { class: "mono" }, e.type), el("td", {}, detail(e)))));
}

function gate(name, v) { return el("span", { class: "gate " + (v ? "pass" : "fail") }, `${name} ${v ? "pass" : "fail"}`); }

function renderGrade(g) {
  if (!g) { $("grade").replaceChildren(el("p", { class: "muted" }, "Not graded yet.")); return; }
  $("grade").replaceChildren(
    el("div", { class: "gates" }, gate("Workflow success", g.ws), gate("Target state", g.ts), gate("Process validity", g.pv), gate("Action completion", g.ac), gate("Artifact validity", g.av)),
    el("p", {}, `Artifact field accuracy ${g.afa.correct}/${g.afa.total} (${(g.afa.value * 100).toFixed(0)}%) · time to resolution ${g.ttr_ms === null ? "not resolved" : fmt(g.ttr_ms)} · final state ${g.final_state} (target ${g.target_state})`),
    el("p", { class: "muted" }, `judge: ${g.judge}`),
    ...(g.violations.length ? [el("h3", {}, "Violations"), el("ul", {}, ...g.violations.map((v) => el("li", { class: "error" }, v)))] : []),
    ...(g.missing_actions.length ? [el("h3", {}, "Missing actions"), el("ul", {}, ...g.missing_actions.map((v) => el("li", { class: "error" }, v)))] : []));
  $("fields").replaceChildren(el("table", {}, el("thead", {}, el("tr", {}, ...["field", "grader", "gold", "agent recorded", "score", ""].map((h) => el("th", {}, h)))),
    el("tbody", {}, ...g.fields.map((f) => el("tr", {}, el("td", {}, f.field + (f.required ? "" : " (optional)")), el("td", {}, f.grader),
      el("td", { class: "mono" }, show(f.gold)), el("td", { class: "mono" }, show(f.pred)), el("td", {}, f.score),
      el("td", {}, el("span", { class: "pill " + (f.pass ? "ok" : "bad") }, f.pass ? "pass" : "miss"), f.note ? " " + f.note : ""))))));
}

function renderArtifact() {
  const fields = {};
  let state = "draft";
  for (const e of events) {
    if (e.type === "artifact.update") fields[e.field] = e.value;
    if (e.type === "artifact.state") state = e.state;
  }
  $("artifact").replaceChildren(el("p", {}, "Lifecycle state: ", el("strong", {}, state)),
    el("table", {}, el("tbody", {}, ...Object.entries(fields).map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", { class: "mono" }, show(v)))))));
}

async function load() {
  $("sid").textContent = sid;
  const d = await getJSON(`/api/x/sessions/${sid}`);
  // In media-time order (a speech onset is recorded after it is detected); seq breaks ties.
  events = (d.events || []).slice().sort((a, b) => a.t_ms - b.t_ms || a.seq - b.seq);
  const s = d.session;
  durationMS = Math.max(1, ...events.map((e) => e.t_ms));
  $("summary").replaceChildren(el("h2", {}, d.task ? d.task.title : s.TaskID),
    el("p", {}, `Task ${s.TaskID} v${s.TaskVersion} · system ${s.System}${d.alias ? " (" + d.alias + ")" : ""} · ${s.Mode} · status ${s.Status} · ended: ${s.EndReason || "—"} · ${events.length} events (+${d.raw_events} provider events in the trace)`));
  $("exclusion").replaceChildren(s.Exclusion ? el("p", { class: "error" }, `Excluded: ${s.Exclusion.Reason} — ${s.Exclusion.Note || ""} (by ${s.Exclusion.By})`) : el("p", { class: "muted" }, "Not excluded."));
  $("trace-link").href = `/api/x/sessions/${sid}/trace.jsonl`;
  renderGrade(d.grade);
  renderArtifact();
  renderEvents();
  drawTimeline();
  drawWave();
  if (s.Status === "running" || s.Status === "created") {
    // A live session: follow its events until it ends.
    setTimeout(() => load().catch(fail), 2000);
    return;
  }
  try {
    peaks = await getJSON(`/api/x/sessions/${sid}/peaks?n=1600`);
    durationMS = Math.max(durationMS, (peaks.samples / peaks.sample_rate) * 1000);
    $("audio").src = `/api/x/sessions/${sid}/recording.wav`;
    drawTimeline();
    drawWave();
  } catch (e) { /* no recording yet */ }
}

$("audio").ontimeupdate = () => drawWave($("audio").currentTime * 1000);
$("wave").onclick = (ev) => {
  const r = $("wave").getBoundingClientRect();
  $("audio").currentTime = ((ev.clientX - r.left) / r.width) * durationMS / 1000;
  $("audio").play().catch(() => {});
};
$("ex-submit").onclick = async () => {
  if (!confirm(`Exclude this session (${$("ex-reason").value})? Its cell returns to the pool and another participant will run it.`)) return;
  try {
    await getJSON(`/api/x/sessions/${sid}/exclude`, { method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": await csrf() },
      body: JSON.stringify({ reason: $("ex-reason").value, note: $("ex-note").value }) });
    load();
  } catch (e) { fail(e); }
};
load().catch(fail);
