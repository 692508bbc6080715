// The participant's app: consent, microphone check, briefing, the call (WebRTC to the console,
// role card and cues over a DataChannel), and the debrief. Everything shown comes from the
// server's participant view model; this page never receives grader data or system names.
"use strict";

const token = location.pathname.split("/").filter(Boolean)[1] || "";
const api = (p) => `/api/p/${encodeURIComponent(token)}${p}`;
const $ = (id) => document.getElementById(id);
const AUDIO_CONSTRAINTS = { echoCancellation: true, noiseSuppression: true, autoGainControl: true };

let micStream = null;
let micDeviceId = "";

// unavailable marks errors that mean "the study's server or its database is down for now": the
// page says so and retries by itself.
const UNAVAILABLE = "The study is temporarily unavailable. Your progress is saved: nothing you have done is lost. This page keeps trying and carries on by itself.";

async function call(path, opts = {}) {
  let res;
  try {
    res = await fetch(api(path), opts);
  } catch (e) {
    const err = new Error(UNAVAILABLE);
    err.unavailable = true; // the server could not be reached at all
    throw err;
  }
  const type = res.headers.get("content-type") || "";
  const body = type.includes("json") ? await res.json() : await res.text();
  if (!res.ok) {
    const err = new Error((body && body.error) || `${res.status} ${res.statusText}`);
    err.unavailable = res.status === 503 || res.status === 502;
    throw err;
  }
  return body;
}

// notice shows a lasting message above the current step (why a call ended); a transient one
// (the connection was lost) goes once the server answers again.
let noticeTransient = false;
function notice(text, transient = false) {
  $("notice").hidden = !text;
  $("notice").textContent = text || "";
  noticeTransient = transient;
}

function show(step) {
  for (const s of ["consent", "mic", "brief", "call", "done", "none"]) $(`step-${s}`).hidden = s !== step;
}

let retryTimer = null;
function fail(err) {
  $("error").hidden = false;
  $("error").textContent = String(err.message || err);
  if (err.unavailable) {
    show(""); // what to do next is known once the server answers
    $("error").className = "card unavailable";
    clearTimeout(retryTimer);
    retryTimer = setTimeout(load, 3000);
  } else {
    $("error").className = "card error";
  }
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// renderCard draws a role card (persona, goals, constraints, facts, cues) with textContent only.
function renderCard(card, target, opts = {}) {
  target.replaceChildren();
  const role = el("div", { class: "role" });
  role.append(el("p", {}, "You are ", el("strong", {}, card.persona.name), `, ${card.persona.role}.`));
  if (card.persona.speaking) role.append(el("p", { class: "muted" }, card.persona.speaking));
  role.append(el("h3", {}, "Why you are calling"), el("ul", {}, ...card.goals.map((g) => el("li", {}, g))));
  if (card.constraints && card.constraints.length) {
    role.append(el("h3", {}, "Keep in mind"), el("ul", {}, ...card.constraints.map((g) => el("li", {}, g))));
  }
  role.append(el("h3", {}, "What you know"));
  const rows = card.facts.map((f) =>
    el("tr", { class: f.hint.startsWith("new") ? "fact-new" : "", "data-fact": f.id },
      el("td", {}, f.label), el("td", { class: "value" }, f.value), el("td", { class: "hint" }, f.hint)));
  role.append(el("table", { class: "facts" }, el("tbody", {}, ...rows)));
  target.append(role);
  if (opts.cues) renderCues(card.cues || [], opts.newCues || []);
}

let shownCues = new Set();
let dc = null;

function renderCues(cues, newCues) {
  const box = $("call-cues");
  box.replaceChildren();
  for (const c of cues.slice().reverse()) {
    const when = `${Math.floor(c.issued_ms / 60000)}:${String(Math.floor(c.issued_ms / 1000) % 60).padStart(2, "0")}`;
    const d = el("div", { class: "cue" + (newCues.includes(c.id) ? " new" : ""), "data-cue": c.id },
      el("div", { class: "when" }, `Cue at ${when}`), el("div", {}, c.text));
    box.append(d);
  }
  // Tell the server each cue once it is on screen (after the browser painted it).
  requestAnimationFrame(() => requestAnimationFrame(() => {
    for (const c of cues) {
      if (shownCues.has(c.id) || !dc || dc.readyState !== "open") continue;
      shownCues.add(c.id);
      dc.send(JSON.stringify({ type: "cue.shown", cue_id: c.id }));
    }
  }));
}

async function load() {
  try {
    const st = await call("/state");
    clearTimeout(retryTimer);
    $("error").hidden = true;
    if (noticeTransient) notice("");
    $("study-title").textContent = st.study || "Voice assistant study";
    document.title = st.study || document.title;
    $("progress").textContent = st.done ? "All calls done" : st.call && st.total ? `Call ${st.call.position} of ${st.total}` : "";
    if (!st.consented) return showConsent(st);
    if (!st.mic_checked) return showMic();
    if (st.done) return showDone(st);
    if (!st.call) return show("none");
    return showBrief(st.call);
  } catch (e) { fail(e); }
}

function showConsent(st) {
  $("consent-text").textContent = st.consent;
  $("consent-check").onchange = () => { $("consent-agree").disabled = !$("consent-check").checked; };
  $("consent-agree").onclick = async () => {
    try {
      await call("/consent", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ agree: true }) });
      load();
    } catch (e) { fail(e); }
  };
  show("consent");
}

async function openMic(deviceId) {
  if (micStream) micStream.getTracks().forEach((t) => t.stop());
  const audio = { ...AUDIO_CONSTRAINTS };
  if (deviceId) audio.deviceId = { exact: deviceId };
  micStream = await navigator.mediaDevices.getUserMedia({ audio, video: false });
  micDeviceId = micStream.getAudioTracks()[0].getSettings().deviceId || deviceId || "";
  return micStream;
}

let meterStop = null;
function meter(stream) {
  if (meterStop) meterStop();
  const ctx = new AudioContext();
  const src = ctx.createMediaStreamSource(stream);
  const an = ctx.createAnalyser();
  an.fftSize = 1024;
  src.connect(an);
  const buf = new Float32Array(an.fftSize);
  let peak = 0, running = true;
  const step = () => {
    if (!running) return;
    an.getFloatTimeDomainData(buf);
    let sum = 0;
    for (const v of buf) sum += v * v;
    const rms = Math.sqrt(sum / buf.length);
    peak = Math.max(peak, rms);
    $("mic-level").style.width = `${Math.min(100, rms * 400)}%`;
    requestAnimationFrame(step);
  };
  step();
  meterStop = () => { running = false; ctx.close(); };
  return () => peak;
}

async function showMic() {
  show("mic");
  let peakOf = () => 0;
  let recorded = false;
  const refresh = async (deviceId) => {
    const s = await openMic(deviceId);
    peakOf = meter(s);
    const set = s.getAudioTracks()[0].getSettings();
    $("mic-granted").textContent = `Echo cancellation ${set.echoCancellation ? "on" : "off"}, noise suppression ${set.noiseSuppression ? "on" : "off"}, auto gain ${set.autoGainControl ? "on" : "off"}.`;
  };
  $("mic-record").disabled = true;
  try {
    await refresh("");
    const devices = (await navigator.mediaDevices.enumerateDevices()).filter((d) => d.kind === "audioinput");
    $("mic-device").replaceChildren(...devices.map((d, i) => el("option", { value: d.deviceId }, d.label || `Microphone ${i + 1}`)));
    $("mic-device").value = micDeviceId;
    $("mic-device").onchange = () => refresh($("mic-device").value).catch(fail);
  } catch (e) {
    return fail(new Error(`The microphone could not be opened (${e.message}). Allow microphone access and reload the page.`));
  }
  const update = () => { $("mic-done").disabled = !(recorded && $("mic-heard").checked); };
  $("mic-heard").onchange = update;
  $("mic-record").onclick = () => {
    const rec = new MediaRecorder(micStream);
    const chunks = [];
    rec.ondataavailable = (e) => chunks.push(e.data);
    rec.onstop = () => {
      const a = $("mic-playback");
      a.src = URL.createObjectURL(new Blob(chunks, { type: rec.mimeType }));
      a.hidden = false;
      a.play().catch(() => {});
      recorded = true;
      $("mic-record").textContent = "Record again";
      $("mic-record").disabled = false;
      update();
    };
    $("mic-record").disabled = true;
    $("mic-record").textContent = "Recording…";
    rec.start();
    setTimeout(() => rec.stop(), 3000);
  };
  $("mic-record").disabled = false; // only now that its handler is in place
  $("mic-done").onclick = async () => {
    const tr = micStream.getAudioTracks()[0];
    const set = tr.getSettings();
    const body = {
      echoCancellation: !!set.echoCancellation, noiseSuppression: !!set.noiseSuppression, autoGainControl: !!set.autoGainControl,
      device: tr.label, level: Math.min(1, peakOf()), playbackOk: $("mic-heard").checked,
      details: { sampleRate: set.sampleRate || 0, channelCount: set.channelCount || 0, latency: set.latency || 0, requested: AUDIO_CONSTRAINTS },
    };
    try {
      await call("/miccheck", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      if (meterStop) meterStop();
      load();
    } catch (e) { fail(e); }
  };
}

function showBrief(c) {
  if (c.notice) notice(""); // the briefing says it
  $("brief-interrupted").hidden = !c.notice;
  $("brief-interrupted").textContent = c.notice || "";
  $("brief-position").textContent = c.position;
  $("brief-agent").textContent = c.agent;
  renderCard(c.card, $("brief-card"));
  $("brief-start").textContent = c.live_session ? "Rejoin call" : c.notice ? "Start the call again" : "Start call";
  $("brief-start").disabled = false;
  $("brief-start").onclick = () => { $("brief-start").disabled = true; startCall().catch(fail); };
  show("brief");
}

function showDone(st) {
  if (st.completion_code) { $("done-code").textContent = st.completion_code; $("done-code-line").hidden = false; }
  if (st.completion_url) { $("done-return").href = st.completion_url; $("done-return-line").hidden = false; }
  show("done");
}

let pc = null, elapsedTimer = null, ending = false;
document.addEventListener("click", () => { const a = $("agent-audio"); if (a.srcObject && a.paused) a.play().catch(() => {}); });

async function startCall() {
  ending = false;
  const started = await call("/call", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
  notice("");
  const sid = started.session;
  $("call-agent").textContent = started.agent;
  shownCues = new Set();
  renderCard(started.card, $("call-card"), { cues: true });
  show("call");
  const stream = micStream && micStream.getAudioTracks()[0].readyState === "live" ? micStream : await openMic(micDeviceId);
  pc = new RTCPeerConnection({ iceServers: [] });
  window.__auditPeer = pc; // for diagnostics (getStats) in the browser console and tests
  pc.addTrack(stream.getAudioTracks()[0], stream);
  dc = pc.createDataChannel("audit");
  dc.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.type === "card" && msg.card) {
      renderCard(msg.card, $("call-card"), { cues: true, newCues: msg.new_cues || [] });
      setElapsed(msg.card.elapsed_ms);
    }
    if (msg.type === "ended" || msg.ended) {
      if (msg.notice) notice(msg.notice);
      finishCall(sid);
    }
  };
  dc.onopen = () => renderCues(started.card.cues || [], []);
  pc.ontrack = (e) => {
    $("agent-audio").srcObject = e.streams[0] || new MediaStream([e.track]);
    $("agent-audio").play().catch(() => fail(new Error("The browser blocked the agent's audio: click anywhere on the page to hear it.")));
  };
  let lostTimer = null;
  pc.onconnectionstatechange = () => {
    if (!pc) return;
    const s = pc.connectionState;
    $("call-status").textContent = s === "connected" ? "connected" : s;
    $("call-status").className = "pill " + (s === "connected" ? "live" : s === "failed" ? "bad" : "");
    clearTimeout(lostTimer);
    // The console went away (or the network did): leave the call and ask the server where things
    // stand, retrying until it answers (a call still running is rejoined from the briefing).
    const lost = () => { notice("The connection to the study was lost. Waiting for it to come back…", true); finishCall(sid); };
    if (s === "failed") lost();
    else if (s === "disconnected") lostTimer = setTimeout(lost, 6000);
  };
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  await gathered(pc);
  const res = await fetch(api(`/call/${sid}/offer`), { method: "POST", headers: { "Content-Type": "application/sdp" }, body: pc.localDescription.sdp });
  if (!res.ok) throw new Error((await res.json()).error || "signalling failed");
  await pc.setRemoteDescription({ type: "answer", sdp: await res.text() });
  const t0 = Date.now() - (started.card.elapsed_ms || 0);
  clearInterval(elapsedTimer);
  elapsedTimer = setInterval(() => { setElapsed(Date.now() - t0); showAgentLevel(); }, 250);
  $("call-mute").onclick = () => {
    const tr = stream.getAudioTracks()[0];
    tr.enabled = !tr.enabled;
    $("call-mute").textContent = tr.enabled ? "Mute" : "Unmute";
  };
  $("call-hangup").onclick = async () => {
    $("call-hangup").disabled = true;
    try { await call(`/call/${sid}/hangup`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" }); } catch (e) { /* ended already */ }
    finishCall(sid);
  };
}

// showAgentLevel lights "speaking" while the agent's audio arrives (from the receiver's stats, so
// the agent's voice keeps playing through the peer connection, where echo cancellation covers it).
async function showAgentLevel() {
  if (!pc) return;
  try {
    let level = 0;
    (await pc.getStats()).forEach((r) => { if (r.type === "inbound-rtp" && r.kind === "audio") level = r.audioLevel || 0; });
    $("agent-speaking").hidden = level < 0.02;
  } catch (e) { /* stats unavailable: no indicator */ }
}

function setElapsed(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  $("call-elapsed").textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

// gathered waits for ICE gathering to complete: the console answers one complete offer (no trickle).
function gathered(pc) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(resolve, 3000);
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc.iceGatheringState === "complete") { clearTimeout(t); resolve(); }
    });
  });
}

function finishCall() {
  if (ending) return;
  ending = true;
  clearInterval(elapsedTimer);
  if (pc) { pc.close(); pc = null; }
  dc = null;
  $("call-hangup").disabled = false;
  setTimeout(load, 300);
}

// insecure reports (and explains on the page) a context in which the browser will not give the
// microphone: plain http:// from another machine. Browsers treat https:// and localhost as secure.
function insecure() {
  if (window.isSecureContext && navigator.mediaDevices && navigator.mediaDevices.getUserMedia) return false;
  $("insecure-origin").textContent = location.origin;
  $("insecure").hidden = false;
  for (const s of ["consent", "mic", "brief", "call", "done", "none"]) $(`step-${s}`).hidden = true;
  return true;
}

if (!insecure()) load();
