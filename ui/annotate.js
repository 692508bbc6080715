// The annotator's rating app: one frozen caller utterance at a time, in this annotator's order,
// with its audio, transcript, the caller's plan and what the caller knows. Everything shown comes
// from the server's blinded item view; this page never receives gold values, grader state or
// another annotator's ratings. Keyboard shortcuts are listed on the page.
"use strict";

const token = location.pathname.split("/").filter(Boolean)[1] || "";
const api = (p) => `/api/a/${encodeURIComponent(token)}${p}`;
const $ = (id) => document.getElementById(id);
const NATURALNESS_KEYS = ["KeyQ", "KeyW", "KeyE", "KeyR", "KeyT"];

let state = null; // {study, total, order, ratings, resume}
let index = 0; // position in state.order
let item = null; // the current item view
let draft = { fidelity: 0, naturalness: 0, leakage: null, note: "" };
let dirty = false;
let noteOnKeyUp = false; // M moves focus to the note when the key comes up, so the M is not typed

async function call(path, opts = {}) {
  const res = await fetch(api(path), opts);
  const type = res.headers.get("content-type") || "";
  const body = type.includes("json") ? await res.json() : await res.text();
  if (!res.ok) throw new Error((body && body.error) || `${res.status} ${res.statusText}`);
  return body;
}

function fail(err) {
  $("error").hidden = false;
  $("error").textContent = String(err.message || err);
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function buildScale(name) {
  const box = $(name);
  for (let v = 1; v <= 5; v++) {
    const input = el("input", { type: "radio", name, value: String(v), id: `${name}-${v}` });
    input.addEventListener("change", () => setValue(name, v));
    box.append(el("label", { for: `${name}-${v}` }, input, ` ${v}`));
  }
}

function setValue(name, value) {
  draft[name] = value;
  dirty = true;
  renderDraft();
}

function renderDraft() {
  for (const name of ["fidelity", "naturalness"]) {
    for (let v = 1; v <= 5; v++) $(`${name}-${v}`).checked = draft[name] === v;
  }
  $("leak-yes").checked = draft.leakage === true;
  $("leak-no").checked = draft.leakage === false;
  if (document.activeElement !== $("note")) $("note").value = draft.note;
  const complete = draft.fidelity > 0 && draft.naturalness > 0 && draft.leakage !== null;
  $("save").disabled = !complete;
  $("save-state").textContent = dirty ? "not saved yet" : (state.ratings[item && item.id] ? "saved" : "");
}

function renderPlan(plan) {
  const box = $("plan");
  box.replaceChildren();
  box.append(el("p", {}, el("span", { class: "pill" }, plan.kind.replace(/_/g, " ")), plan.intent ? ` — ${plan.intent}` : ""));
  if (plan.facts && plan.facts.length) {
    box.append(el("table", { class: "facts" }, el("tbody", {}, ...plan.facts.map((f) =>
      el("tr", {}, el("td", {}, f.label), el("td", { class: "value" }, f.value), el("td", { class: "muted" }, f.spoken && f.spoken !== f.value ? `said as “${f.spoken}”` : ""))))));
  } else {
    box.append(el("p", { class: "muted" }, "No facts: the plan is only the act above."));
  }
}

function renderState(us) {
  const box = $("state");
  box.replaceChildren();
  box.append(el("p", {}, el("strong", {}, us.persona.name), `, ${us.persona.role}.`));
  if (us.persona.speaking) box.append(el("p", { class: "muted" }, us.persona.speaking));
  box.append(el("p", { class: "label" }, "Goals"), el("ul", {}, ...us.goals.map((g) => el("li", {}, g))));
  if (us.constraints && us.constraints.length) box.append(el("p", { class: "label" }, "Constraints"), el("ul", {}, ...us.constraints.map((g) => el("li", {}, g))));
  box.append(el("table", { class: "facts" }, el("tbody", {}, ...us.facts.map((f) =>
    el("tr", {}, el("td", {}, f.label), el("td", { class: "value" }, f.value), el("td", { class: "muted" }, f.hint || ""))))));
  if (us.cues && us.cues.length) box.append(el("p", { class: "label" }, "Cues shown so far"), el("ul", {}, ...us.cues.map((c) => el("li", {}, c))));
}

function renderProgress() {
  const rated = Object.keys(state.ratings).length;
  $("progress").textContent = `${rated} of ${state.total} rated`;
}

async function open(i) {
  if (i >= state.total) {
    $("item").hidden = true;
    $("rate").hidden = true;
    $("done").hidden = false;
    index = state.total;
    item = null;
    $("audio").pause();
    renderProgress();
    $("done-heading").focus();
    return;
  }
  index = Math.max(0, i);
  item = await call(`/items/${encodeURIComponent(state.order[index])}`);
  const r = item.rating;
  draft = r ? { fidelity: r.fidelity, naturalness: r.naturalness, leakage: r.leakage, note: r.note } : { fidelity: 0, naturalness: 0, leakage: null, note: "" };
  dirty = false;
  $("done").hidden = true;
  $("item").hidden = false;
  $("rate").hidden = false;
  $("item-number").textContent = String(index + 1);
  $("item-total").textContent = String(state.total);
  $("item-status").textContent = r ? "rated" : "new";
  $("item-status").className = r ? "pill ok" : "pill";
  $("transcript").textContent = item.transcript;
  renderPlan(item.user_plan);
  renderState(item.user_state);
  $("note").value = draft.note;
  renderDraft();
  renderProgress();
  document.body.dataset.item = item.id; // lets tests and screen readers know which item is shown
  const audio = $("audio");
  audio.src = item.audio;
  if ($("autoplay").checked) audio.play().catch(() => {});
  $("prev").disabled = index === 0;
  history.replaceState(null, "", `#${index + 1}`);
  // Focus moves to the new item's heading (screen readers announce it; the shortcuts still work).
  if (document.activeElement !== $("note")) $("item-heading").focus({ preventScroll: true });
}

async function save() {
  if (!item || $("save").disabled) return;
  draft.note = $("note").value;
  const saved = await call(`/ratings/${encodeURIComponent(item.id)}`, {
    method: "PUT",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(draft),
  });
  state.ratings[item.id] = saved;
  dirty = false;
  await open(index + 1);
}

function onKey(e) {
  if (e.target === $("note")) {
    if (e.key === "Escape") { $("note").blur(); e.preventDefault(); }
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save().catch(fail); }
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (!item) {
    if (e.key === "ArrowLeft") open(state.total - 1).catch(fail);
    return;
  }
  const digit = /^(Digit|Numpad)([1-5])$/.exec(e.code);
  const nat = NATURALNESS_KEYS.indexOf(e.code);
  const key = e.key.toLowerCase();
  if (digit) setValue("fidelity", Number(digit[2]));
  else if (nat >= 0) setValue("naturalness", nat + 1);
  else if (key === "y") setValue("leakage", true);
  else if (key === "n") setValue("leakage", false);
  else if (key === "m") noteOnKeyUp = true;
  else if (e.key === "Enter") save().catch(fail);
  else if (e.key === "ArrowLeft") open(index - 1).catch(fail);
  else if (e.key === "ArrowRight") open(index + 1).catch(fail);
  else if (e.key === " ") { const a = $("audio"); if (a.paused) a.play().catch(() => {}); else a.pause(); }
  else if (key === "a") { $("autoplay").checked = !$("autoplay").checked; $("autoplay").dispatchEvent(new Event("change")); }
  else return;
  e.preventDefault();
}

async function start() {
  buildScale("fidelity");
  buildScale("naturalness");
  $("autoplay").checked = localStorage.getItem("annotate.autoplay") === "1";
  $("autoplay").addEventListener("change", () => localStorage.setItem("annotate.autoplay", $("autoplay").checked ? "1" : "0"));
  $("leak-yes").addEventListener("change", () => setValue("leakage", true));
  $("leak-no").addEventListener("change", () => setValue("leakage", false));
  $("note").addEventListener("input", () => { draft.note = $("note").value; dirty = true; renderDraft(); });
  $("rating").addEventListener("submit", (e) => { e.preventDefault(); save().catch(fail); });
  $("prev").addEventListener("click", () => open(index - 1).catch(fail));
  $("next").addEventListener("click", () => open(index + 1).catch(fail));
  $("review").addEventListener("click", () => open(0).catch(fail));
  document.addEventListener("keydown", onKey);
  document.addEventListener("keyup", (e) => {
    if (noteOnKeyUp && e.key.toLowerCase() === "m") { noteOnKeyUp = false; $("note").focus(); }
  });
  state = await call("/state");
  $("study-title").textContent = state.title;
  document.title = state.title;
  // The intro is open until the annotator has rated something or folded it away.
  const intro = $("intro");
  intro.open = localStorage.getItem("annotate.intro") !== "closed" && Object.keys(state.ratings).length === 0;
  intro.addEventListener("toggle", () => localStorage.setItem("annotate.intro", intro.open ? "open" : "closed"));
  await open(state.resume);
  document.body.dataset.ready = "1";
}

start().catch(fail);
