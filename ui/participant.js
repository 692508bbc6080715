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

const STEPS = ["consent", "declined", "mic", "brief", "call", "practice-done", "done", "none"];
let current = "";

// show makes step the only one visible and, when it is a new step, moves the keyboard and
// screen-reader focus to its heading.
function show(step) {
  for (const s of STEPS) $(`step-${s}`).hidden = s !== step;
  if (step && step !== current) {
    const h = $(`step-${step}`).querySelector("h2");
    if (h) h.focus({ preventScroll: step === "call" });
  }
  current = step;
}

// steps draws the step indicator: Consent · Microphone · (Practice ·) Call 1 of N · Done.
function steps(st, at) {
  const items = [["consent", "Consent"], ["mic", "Microphone"]];
  if (st.has_practice) items.push(["practice", "Practice call"]);
  const n = st.total || 0;
  const pos = st.call && !st.practice ? st.call.position : st.completed + (st.done ? 0 : 1);
  items.push(["call", n ? `Call ${Math.min(Math.max(pos, 1), n)} of ${n}` : "Calls"], ["done", "Done"]);
  const order = items.map((i) => i[0]);
  const idx = order.indexOf(at);
  $("steps").replaceChildren(...items.map(([k, label], i) => {
    const li = el("li", { class: i < idx ? "past" : i === idx ? "now" : "" }, label);
    if (i === idx) li.setAttribute("aria-current", "step");
    return li;
  }));
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
      el("th", { scope: "row" }, f.label), el("td", { class: "value" }, f.value), el("td", { class: "hint" }, f.hint)));
  role.append(el("table", { class: "facts" }, el("caption", { class: "visually-hidden" }, "What you know"), el("tbody", {}, ...rows)));
  target.append(role);
  if (opts.cues) renderCues(card.cues || [], opts.newCues || []);
}

// mmss formats a media time as m:ss.d, the trace's own clock to a tenth of a second.
function mmss(ms) {
  const t = Math.max(0, Math.floor(ms / 100));
  const s = Math.floor(t / 10);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}.${t % 10}`;
}

let shownCues = new Set();
let dc = null;
let cueSeen = new Map(); // cue id → its elements at least half in view
let cueObserver = null;
let lastNewest = "";

// cue.shown is sent when a cue is actually visible: the tab is visible and at least half of one of
// the cue's boxes is in the viewport (IntersectionObserver); the server stamps it on receipt.
function observer() {
  if (cueObserver) return cueObserver;
  cueObserver = new IntersectionObserver((entries) => {
    for (const e of entries) {
      const id = e.target.dataset.cue;
      const set = cueSeen.get(id) || new Set();
      if (e.isIntersecting && e.intersectionRatio >= 0.5) set.add(e.target); else set.delete(e.target);
      cueSeen.set(id, set);
    }
    reportShown();
  }, { threshold: [0, 0.5, 1] });
  return cueObserver;
}
document.addEventListener("visibilitychange", () => reportShown());

function reportShown() {
  if (document.visibilityState !== "visible" || !dc || dc.readyState !== "open") return;
  for (const [id, set] of cueSeen) {
    if (set.size === 0 || shownCues.has(id)) continue;
    shownCues.add(id);
    dc.send(JSON.stringify({ type: "cue.shown", cue_id: id }));
  }
}

function cueBox(c, isNew) {
  const d = el("div", { class: "cue" + (isNew ? " new" : ""), "data-cue": c.id, "data-issued-ms": String(c.issued_ms) },
    el("div", { class: "when" }, `Cue at ${mmss(c.issued_ms)}`), el("div", { class: "text" }, c.text));
  observer().observe(d);
  return d;
}

// renderCues puts the newest cue in the sticky area under the call bar (announced through its
// aria-live region) and the earlier ones below the role card, newest first.
function renderCues(cues, newCues) {
  if (cueObserver) { cueObserver.disconnect(); }
  cueSeen = new Map();
  const ordered = cues.slice().reverse();
  const newest = ordered[0];
  const now = $("cue-now");
  if (!newest) now.replaceChildren();
  else if (newest.id !== lastNewest || !now.firstChild) {
    now.replaceChildren(cueBox(newest, newCues.includes(newest.id)));
    if (newCues.includes(newest.id)) chime(); // not on a reload: only a cue that just fired
  } else observer().observe(now.firstChild);
  lastNewest = newest ? newest.id : "";
  const rest = ordered.slice(1);
  $("cue-history").replaceChildren(...rest.map((c) => cueBox(c, false)));
  $("cue-history-box").hidden = rest.length === 0;
}

// chime plays a short soft tone for a new cue when the participant chose it at the mic check.
let chimeCtx = null;
function chime() {
  if (localStorage.getItem("audit.chime") !== "1") return;
  try {
    chimeCtx = chimeCtx || new AudioContext();
    const o = chimeCtx.createOscillator(), g = chimeCtx.createGain(), t = chimeCtx.currentTime;
    o.frequency.value = 880;
    g.gain.setValueAtTime(0.0001, t);
    g.gain.exponentialRampToValueAtTime(0.08, t + 0.02);
    g.gain.exponentialRampToValueAtTime(0.0001, t + 0.5);
    o.connect(g).connect(chimeCtx.destination);
    o.start(t);
    o.stop(t + 0.55);
  } catch (e) { /* no audio output: the cue is still shown and announced */ }
}

async function load() {
  try {
    const st = await call("/state");
    clearTimeout(retryTimer);
    $("error").hidden = true;
    if (noticeTransient) notice("");
    $("study-title").textContent = st.study || "Voice assistant study";
    document.title = st.study || document.title;
    $("progress").textContent = st.done ? "All calls done" : st.practice ? "Practice call" : st.call && st.total ? `Call ${st.call.position} of ${st.total}` : "";
    contact = st.contact || "";
    if (!st.consented) { steps(st, "consent"); return showConsent(st); }
    if (!st.mic_checked) { steps(st, "mic"); return showMic(); }
    if (st.done) { steps(st, "done"); return showDone(st); }
    if (!st.call) {
      steps(st, "call");
      $("none-contact").textContent = contact ? ` (${contact})` : "";
      return show("none");
    }
    steps(st, st.practice ? "practice" : "call");
    return showBrief(st.call);
  } catch (e) { fail(e); }
}
let contact = "";

function showConsent(st) {
  $("consent-text").textContent = st.consent;
  $("consent-check").onchange = () => { $("consent-agree").disabled = !$("consent-check").checked; };
  $("consent-decline").onclick = () => {
    $("declined-contact").textContent = st.contact || "";
    $("declined-contact-line").hidden = !st.contact;
    show("declined");
  };
  $("declined-back").onclick = () => show("consent");
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
function meter(stream, bar = "mic-level", box = "mic-meter") {
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
    const pct = Math.round(Math.min(100, rms * 400));
    $(bar).style.width = `${pct}%`;
    $(box).setAttribute("aria-valuenow", String(pct));
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
    const helps = [set.echoCancellation && "stops the assistant's voice from echoing back", set.noiseSuppression && "reduces background noise",
      set.autoGainControl && "evens out your volume"].filter(Boolean);
    $("mic-granted").textContent = helps.length ? `Your browser ${helps.join(", ")}.` :
      "Your browser does not clean up the sound: please use headphones, or a quiet room, if you can.";
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
  $("mic-chime").checked = localStorage.getItem("audit.chime") === "1";
  $("mic-chime").onchange = () => {
    localStorage.setItem("audit.chime", $("mic-chime").checked ? "1" : "0");
    if ($("mic-chime").checked) chime(); // a sample of the sound
  };
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
  $("brief-heading").firstChild.textContent = c.practice ? "Your role for the practice call" : "Your role for call ";
  $("brief-position").hidden = !!c.practice;
  $("brief-practice").hidden = !c.practice;
  $("brief-agent").textContent = c.agent;
  minCallMS = c.min_call_ms || 0;
  practiceCall = !!c.practice;
  renderCard(c.card, $("brief-card"));
  $("brief-start").textContent = c.live_session ? "Rejoin call" : c.notice ? "Start the call again" : "Start call";
  $("brief-start").disabled = false;
  $("brief-start").onclick = () => { $("brief-start").disabled = true; startCall().catch(fail); };
  show("brief");
}

let minCallMS = 0, practiceCall = false;

function showDone(st) {
  if (st.completion_code) { $("done-code").textContent = st.completion_code; $("done-code-line").hidden = false; }
  $("done-copy").onclick = async () => {
    try {
      await navigator.clipboard.writeText(st.completion_code);
      $("done-copied").textContent = "Copied.";
    } catch (e) {
      // No clipboard permission: select the code so the participant can copy it themselves.
      const r = document.createRange();
      r.selectNodeContents($("done-code"));
      getSelection().removeAllRanges();
      getSelection().addRange(r);
      $("done-copied").textContent = "Selected: press Ctrl+C (or ⌘C) to copy.";
    }
  };
  if (st.completion_url) { $("done-return").href = st.completion_url; $("done-return-line").hidden = false; }
  show("done");
}

let pc = null, elapsedTimer = null, ending = false, elapsedMS = 0;
document.addEventListener("click", () => { const a = $("agent-audio"); if (a.srcObject && a.paused) a.play().catch(() => {}); });

async function startCall() {
  ending = false;
  const started = await call("/call", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
  notice("");
  const sid = started.session;
  practiceCall = !!started.practice;
  $("call-agent").textContent = started.agent;
  shownCues = new Set();
  lastNewest = "";
  $("hangup-confirm").hidden = true;
  $("cue-now").replaceChildren();
  show("call");
  renderCard(started.card, $("call-card"), { cues: true });
  const stream = micStream && micStream.getAudioTracks()[0].readyState === "live" ? micStream : await openMic(micDeviceId);
  meter(stream, "own-level", "own-meter");
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
    // A card marked ended comes when the call stops, before the console has closed it in the
    // study's records; "ended" comes once it has. Only then is the next step asked for, so the
    // state never shows the call that just ended as still to do.
    if (msg.type === "card" && msg.ended) {
      if (msg.notice) notice(msg.notice);
      $("call-status").textContent = "ending…";
      $("call-hangup").disabled = true;
    }
    if (msg.type === "ended") {
      if (msg.notice) notice(msg.notice);
      finishCall(sid, true);
    }
  };
  dc.onopen = () => reportShown();
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
  // Hang up asks first; under the study's minimum it says the call will not count.
  $("call-hangup").onclick = () => {
    const short = !practiceCall && minCallMS > 0 && elapsedMS < minCallMS;
    $("hangup-short").textContent = short ?
      `The call is shorter than ${Math.round(minCallMS / 1000)} seconds, so it will not count and you will be asked to make it again.` : "";
    $("hangup-confirm").hidden = false;
    $("hangup-yes").focus();
  };
  $("hangup-no").onclick = () => { $("hangup-confirm").hidden = true; $("call-hangup").focus(); };
  $("hangup-yes").onclick = async () => {
    $("hangup-yes").disabled = true;
    $("call-hangup").disabled = true;
    // The server answers once the call is closed in the study's records, so the next state is
    // already the next step (no guess at how long the closing takes).
    try { await call(`/call/${sid}/hangup`, { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" }); } catch (e) { /* ended already */ }
    finishCall(sid, true);
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
  elapsedMS = ms;
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

// finishCall leaves the call. After a hang-up the server has closed the call already; when the
// call ended on the server's side (its "ended" message comes after the closing) or the connection
// was lost, the state is asked for again. A practice call shows its feedback first.
function finishCall(sid, hungUp = false) {
  if (ending) return;
  ending = true;
  clearInterval(elapsedTimer);
  if (meterStop) meterStop();
  if (pc) { pc.close(); pc = null; }
  dc = null;
  $("call-hangup").disabled = false;
  $("hangup-yes").disabled = false;
  $("hangup-confirm").hidden = true;
  if (practiceCall && sid) return showPracticeDone(sid);
  if (hungUp) load(); else setTimeout(load, 300);
}

async function showPracticeDone(sid) {
  try {
    const r = await call(`/practice/${encodeURIComponent(sid)}`);
    $("practice-result").textContent = r.graded ?
      `In your practice call the agent recorded ${r.recorded} of ${r.items} items correctly.` :
      "Your practice call was not long enough to check what the agent recorded.";
  } catch (e) {
    return e.unavailable ? fail(e) : load(); // not closed yet (the connection was lost): ask again
  }
  $("practice-continue").onclick = () => load();
  show("practice-done");
}

// insecure reports (and explains on the page) a context in which the browser will not give the
// microphone: plain http:// from another machine. Browsers treat https:// and localhost as secure.
function insecure() {
  if (window.isSecureContext && navigator.mediaDevices && navigator.mediaDevices.getUserMedia) return false;
  $("insecure-origin").textContent = location.origin;
  $("insecure").hidden = false;
  for (const s of STEPS) $(`step-${s}`).hidden = true;
  return true;
}

if (!insecure()) load();
