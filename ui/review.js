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
  if (e.type === "cue.acted") parts.push(e.ok ? "workspace changed as cued" : "not acted on");
  if (e.meta && (e.type === "session.start" || e.type === "media.stats" || e.type === "agent.usage")) parts.push(JSON.stringify(e.meta));
  return parts.join(" · ");
}

// Each event type belongs to one filter category.
function category(t) {
  if (t === "caller.utterance" || t === "agent.transcript" || t === "caller.plan" || t === "agent.act" || t.endsWith("speech_start") || t.endsWith("speech_end")) return "transcript";
  if (t.startsWith("tool.") || t.startsWith("artifact.")) return "tools";
  if (t.startsWith("cue.")) return "cues";
  if (t.startsWith("auth.")) return "authorization";
  if (t.startsWith("media.") || t === "caller.audio_start") return "media";
  if (t.startsWith("agent.")) return "provider";
  return "other";
}
const rowClass = (t) => t.startsWith("cue.") ? "cue" : t === "auth.commit_blocked" || t === "agent.error" ? "bad" : t.startsWith("auth.") ? "auth" : "";
function shownCategories() {
  return new Set([...document.querySelectorAll(".filters input:checked")].map((i) => i.value));
}
function seek(ms) {
  const a = $("audio");
  if (!a.src) return;
  a.currentTime = ms / 1000;
  a.play().catch(() => {});
}

// turns groups the conversation into caller and agent turns (consecutive segments of one side are
// one turn, timed from that side's speech onset before them) with the other shown events inline.
function turns(evs) {
  const out = [];
  let onset = { caller: null, agent: null }, cur = null;
  for (const e of evs) {
    if (e.type === "caller.speech_start") onset.caller = e.t_ms;
    if (e.type === "agent.speech_start") onset.agent = e.t_ms;
    const who = e.type === "caller.utterance" ? "caller" : e.type === "agent.transcript" ? "agent" : null;
    if (who) {
      if (cur && cur.who === who) { cur.text += " " + e.text; continue; }
      const at = onset[who] !== null && onset[who] <= e.t_ms && (!out.length || onset[who] >= out[out.length - 1].t_ms) ? onset[who] : e.t_ms;
      cur = { kind: "turn", who, t_ms: at, text: e.text || "" };
      out.push(cur);
      continue;
    }
    if (category(e.type) === "transcript") continue; // onsets and plans are in the turn's time
    cur = null;
    out.push({ kind: "inline", e, t_ms: e.t_ms });
  }
  return out;
}

function renderEvents() {
  const cats = shownCategories();
  const evs = events.filter((e) => cats.has(category(e.type)));
  const transcript = document.querySelector('input[name=view]:checked').value === "transcript";
  $("transcript").hidden = !transcript;
  $("events-view").hidden = transcript;
  $("shown-count").textContent = `${evs.length} of ${events.length} events shown`;
  if (!transcript) {
    $("events").querySelector("tbody").replaceChildren(...evs.map((e) => el("tr", { class: rowClass(e.type) },
      el("td", { class: "mono" }, fmt(e.t_ms)), el("td", { class: "mono" }, e.type), el("td", {}, detail(e)))));
    return;
  }
  const items = turns(cats.has("transcript") ? evs : evs.filter((e) => category(e.type) !== "transcript"));
  $("transcript").replaceChildren(...items.map((it) => {
    const btn = el("button", { class: "seek", "aria-label": `play from ${fmt(it.t_ms)}` }, fmt(it.t_ms));
    btn.onclick = (ev) => { ev.stopPropagation(); seek(it.t_ms); };
    if (it.kind === "turn") {
      const li = el("li", { class: "turn " + it.who, "data-t": it.t_ms }, btn, el("span", { class: "who" }, it.who === "caller" ? "Caller" : "Agent"), el("span", {}, it.text));
      li.onclick = () => seek(it.t_ms);
      return li;
    }
    return el("li", { class: "inline " + rowClass(it.e.type), "data-t": it.t_ms }, btn, el("span", { class: "mono" }, it.e.type), el("span", {}, detail(it.e)));
  }));
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
  $("fields").replaceChildren(el("table", {}, el("thead", {}, el("tr", {}, ...["field", "grader", "gold", "agent recorded", "score", "result"].map((h) => el("th", {}, h)))),
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

// While the call runs: the agent's artifact so far beside the gold it will be graded against.
function renderRunningFields(gold) {
  const fields = {};
  for (const e of events) if (e.type === "artifact.update") fields[e.field] = e.value;
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  $("fields").replaceChildren(el("p", { class: "muted" }, "Live: the agent's values so far. The grader decides at the end (tolerances, synonyms)."),
    el("table", {}, el("thead", {}, el("tr", {}, ...["field", "gold", "agent so far", "so far"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...(gold || []).map((f) => {
        const has = Object.prototype.hasOwnProperty.call(fields, f.field);
        const ok = has && same(fields[f.field], f.gold);
        return el("tr", {}, el("td", {}, f.field), el("td", { class: "mono" }, show(f.gold)), el("td", { class: "mono" }, has ? show(fields[f.field]) : "—"),
          el("td", {}, el("span", { class: "match " + (has ? (ok ? "yes" : "no") : "") }, has ? (ok ? "matches" : "differs") : "not yet")));
      }))));
}

function renderHealth(h) {
  const pct = h.ticks ? (100 * h.late_ticks / h.ticks).toFixed(1) : "0.0";
  $("media-health").replaceChildren(el("strong", {}, "Media health: "),
    `${h.late_ticks} of ${h.ticks} ticks late (${pct}%, more than ${h.threshold_ms} ms after due; worst ${h.max_late_ms.toFixed(1)} ms) · ` +
    `caller packets lost ${h.packets_lost} of ${h.packets_received + h.packets_lost} · jitter ${h.jitter_ms.toFixed(1)} ms · participant ${h.participant_connected ? "connected" : "not connected"} · ${h.listeners} listening`);
  $("media-explained").textContent = h.explanation;
}

// Listening in: a receive-only connection with the caller's channel and the agent's, both muted
// until clicked. Each channel's level is measured (Web Audio) on the audio as received, before the
// mute: Chromium's own audio-level statistics measure what is played, which is nothing while muted.
let listenPC = null, audioCtx = null;
const meters = {};
async function listen() {
  $("listen-start").disabled = true;
  $("listen-state").textContent = "connecting…";
  audioCtx = new AudioContext(); // created on the click, so the browser lets it run
  const pc = new RTCPeerConnection();
  listenPC = pc;
  const trs = [pc.addTransceiver("audio", { direction: "recvonly" }), pc.addTransceiver("audio", { direction: "recvonly" })];
  ["caller", "agent"].forEach((name, i) => {
    const stream = new MediaStream([trs[i].receiver.track]);
    $("listen-" + name).srcObject = stream; // Chromium feeds Web Audio from a remote track only while an element plays it
    const an = audioCtx.createAnalyser();
    an.fftSize = 2048;
    audioCtx.createMediaStreamSource(stream).connect(an);
    meters[name] = { an, buf: new Float32Array(an.fftSize), db: -100, peak: -100 };
  });
  pc.onconnectionstatechange = () => {
    $("listen-state").textContent = pc.connectionState === "connected" ? "listening (muted until you unmute a channel)" : pc.connectionState;
    if (pc.connectionState === "closed" || pc.connectionState === "failed" || pc.connectionState === "disconnected") $("listen-start").disabled = false;
  };
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((r) => {
    if (pc.iceGatheringState === "complete") return r();
    const t = setTimeout(r, 3000);
    pc.addEventListener("icegatheringstatechange", () => { if (pc.iceGatheringState === "complete") { clearTimeout(t); r(); } });
  });
  const res = await fetch(`/api/x/sessions/${sid}/listen`, { method: "POST", headers: { "Content-Type": "application/sdp", "X-CSRF-Token": await csrf() }, body: pc.localDescription.sdp });
  if (!res.ok) { const b = await res.json().catch(() => ({})); throw new Error(b.error || res.statusText); }
  await pc.setRemoteDescription({ type: "answer", sdp: await res.text() });
  $("listen-controls").hidden = false;
  audioCtx.resume().catch(() => {});
  const tick = setInterval(() => {
    if (pc.connectionState === "closed" || pc.connectionState === "failed") { clearInterval(tick); return; }
    for (const [name, m] of Object.entries(meters)) {
      m.an.getFloatTimeDomainData(m.buf);
      let sum = 0;
      for (const v of m.buf) sum += v * v;
      m.db = 10 * Math.log10(sum / m.buf.length + 1e-12);
      m.peak = Math.max(m.peak, m.db);
      const clamped = Math.max(-60, Math.min(0, m.db));
      $("level-" + name).setAttribute("aria-valuenow", clamped.toFixed(0));
      $("level-" + name).firstElementChild.style.width = `${(clamped + 60) / 60 * 100}%`;
      $(`level-${name}-db`).textContent = m.db < -90 ? "silent" : `${m.db.toFixed(0)} dBFS`;
    }
  }, 100);
}
// listenStats is what each channel has received so far: packets, the level now and the loudest so
// far (dBFS, as measured above), and whether it is muted (the tests read it too).
window.listenStats = async () => {
  const out = {};
  if (!listenPC) return out;
  const trs = listenPC.getTransceivers();
  for (const [i, name] of [[0, "caller"], [1, "agent"]]) {
    const m = meters[name] || { db: -100, peak: -100 };
    const st = { packets: 0, level_db: m.db, peak_db: m.peak, muted: $("listen-" + name).muted };
    (await trs[i].receiver.getStats()).forEach((r) => { if (r.type === "inbound-rtp") st.packets = r.packetsReceived || 0; });
    out[name] = st;
  }
  return out;
};
for (const name of ["caller", "agent"]) {
  $("unmute-" + name).onclick = () => {
    const a = $("listen-" + name);
    a.muted = !a.muted;
    if (!a.muted) a.play().catch(() => {});
    if (audioCtx) audioCtx.resume().catch(() => {});
    $("unmute-" + name).setAttribute("aria-pressed", String(!a.muted));
    $("unmute-" + name).textContent = (a.muted ? "Unmute " : "Mute ") + name;
  };
}
$("listen-start").onclick = () => listen().catch((e) => { $("listen-start").disabled = false; $("listen-state").textContent = ""; fail(e); });

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
  $("live").hidden = !d.live;
  if (d.live) {
    // A live session: its media health, the artifact so far beside gold, and the waveform of the
    // recording as it grows; followed until it ends.
    renderHealth(d.live);
    renderRunningFields(d.gold);
    try {
      peaks = await getJSON(`/api/x/sessions/${sid}/peaks?n=800`);
      durationMS = Math.max(durationMS, (peaks.samples / peaks.sample_rate) * 1000);
      $("wave").dataset.samples = peaks.samples;
    } catch (e) { /* the recording starts with the call's first tick */ }
    drawTimeline();
    drawWave();
    setTimeout(() => load().catch(fail), 2000);
    return;
  }
  drawTimeline();
  drawWave();
  if (s.Status === "running" || s.Status === "created") {
    // Not live on this console yet (or any more): look again shortly.
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
for (const i of document.querySelectorAll(".filters input, input[name=view]")) i.onchange = renderEvents;
$("ex-submit").onclick = async () => {
  if (!confirm(`Exclude this session (${$("ex-reason").value})? Its cell returns to the pool and another participant will run it.`)) return;
  try {
    await getJSON(`/api/x/sessions/${sid}/exclude`, { method: "POST", headers: { "Content-Type": "application/json", "X-CSRF-Token": await csrf() },
      body: JSON.stringify({ reason: $("ex-reason").value, note: $("ex-note").value }) });
    load();
  } catch (e) { fail(e); }
};
load().catch(fail);
