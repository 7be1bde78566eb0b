// The local console. Everything about runs, events and usage comes
// through the public API with the typed client (api/client-example,
// compiled by tsc and served as /console/lib/client.js); only the list of
// installs and users, the alarm's threshold and the spans come from the
// console's own endpoints (/console/api/...), and tokens are minted by it
// (never typed in).
import { ApiError, cancelRun, isFinal, listRuns, turnClient, watchRun } from "/console/lib/client.js";

const origin = location.origin;
const $ = (sel, root = document) => root.querySelector(sel);

// ---- tokens: minted server-side for the page, cached until near expiry.
const tokens = new Map();
async function token(who) {
  const key = who.service ? "\u0000service" : who.userId;
  const held = tokens.get(key);
  if (held && held.until > Date.now()) {
    return held.token;
  }
  const res = await fetch("/console/api/token", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(who.service ? { service: true } : { userId: who.userId }),
  });
  if (!res.ok) {
    throw new Error(`token for ${who.service ? "the service" : who.userId}: ${res.status} ${await res.text()}`);
  }
  const t = await res.json();
  tokens.set(key, { token: t.token, until: Date.parse(t.expiresAt) - 5 * 60_000 });
  return t.token;
}
const asService = () => token({ service: true });
const asUser = (userId) => () => token({ userId });
const service = turnClient(origin, asService);
const clients = new Map();
function clientFor(who) {
  if (who === "\u0000service") {
    return service;
  }
  if (!clients.has(who)) {
    clients.set(who, turnClient(origin, asUser(who)));
  }
  return clients.get(who);
}

// ---- small helpers
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
const usd = (micros) => `$${(Number(micros) / 1e6).toFixed(6)}`;
const int = (n) => Number(n).toLocaleString("en-US");
function duration(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}
const time = (iso) => new Date(iso).toLocaleTimeString("en-GB", { hour12: false });
function problem(err) {
  if (err instanceof ApiError) {
    const d = err.body && "detail" in err.body ? `: ${err.body.detail}` : "";
    return `${err.status} ${err.slug}${d}`;
  }
  return String(err && err.message ? err.message : err);
}
// answer is an openapi-fetch call's answer, or its problem thrown as an
// ApiError; data is its body.
async function answer(promise) {
  const a = await promise;
  if (a.data === undefined) {
    throw new ApiError(a.response.status, a.error && a.error.type ? a.error.type.split("/").pop() : "error", a.error);
  }
  return a;
}
const data = async (promise) => (await answer(promise)).data;
function status(text, isError = false) {
  const s = $("#status");
  s.textContent = text;
  s.classList.toggle("error", isError);
}

// ---- the JSON of anything on screen, one click away
function showJSON(title, value) {
  $("#json-title").textContent = title;
  $("#json-body").textContent = JSON.stringify(value, null, 2);
  $("#json-dialog").showModal();
}
const jsonButton = (title, value) =>
  el("button", { type: "button", class: "json", title: `the JSON of ${title}`, onclick: (ev) => { ev.stopPropagation(); showJSON(title, typeof value === "function" ? value() : value); } }, "JSON");

// changed reports whether what a part of the page shows differs from
// what it showed last, so an unchanged part is not drawn again (the page
// refreshes every 2 s; redrawing would lose focus and hover each time).
const drawn = new Map();
function changed(part, value) {
  const now = JSON.stringify(value);
  if (drawn.get(part) === now) return false;
  drawn.set(part, now);
  return true;
}

// ---- the stack: installs, users and their usage today
const state = { installs: [], users: [], alarmMicros: 0, traces: false, details: new Map(), usage: new Map(), runs: [] };

async function refreshStack() {
  const res = await fetch("/console/api/stack");
  if (!res.ok) throw new Error(`stack: ${res.status} ${await res.text()}`);
  const s = await res.json();
  Object.assign(state, { installs: s.installs, users: s.users, alarmMicros: s.alarmMicros, traces: s.traces });
  await Promise.all([
    ...s.installs.map(async (i) => {
      state.details.set(i.installId, await data(service.GET("/v1/installs/{installId}", { params: { path: { installId: i.installId } } })));
    }),
    ...s.users.map(async (u) => {
      state.usage.set(u, await data(service.GET("/v1/users/{userId}/usage", { params: { path: { userId: u } } })));
    }),
  ]);
  renderInstalls();
  renderUsage();
  renderForm();
}

function renderInstalls() {
  if (!changed("installs", [state.installs, [...state.details]])) return;
  const body = $("#installs tbody");
  body.replaceChildren(
    ...state.installs.map((ref) => {
      const d = state.details.get(ref.installId);
      const m = d && d.migration;
      return el("tr", { dataset: { install: ref.installId } },
        el("td", {}, el("code", {}, ref.installId)),
        el("td", {}, ref.userId),
        el("td", {}, d ? d.engine : ""),
        el("td", { class: "engine-in-effect" }, d ? d.engineInEffect : ""),
        el("td", {}, m ? `${m.state} (${m.from} → ${m.to})` : "none"),
        el("td", {}, jsonButton(`install ${ref.installId}`, () => state.details.get(ref.installId))));
    }),
  );
  if (state.installs.length === 0) body.append(el("tr", {}, el("td", { colspan: 6, class: "note" }, "No install yet.")));
}

function meter(value, max, markers = []) {
  const bar = el("span", { class: "bar" });
  const top = Math.max(max, value, ...markers.map((m) => m.at)) || 1;
  bar.append(el("span", { class: value >= max && max > 0 ? "over" : "", style: `width:${Math.min(100, (100 * value) / top)}%` }));
  for (const m of markers) bar.append(el("i", { class: m.cls, title: m.title, style: `left:${Math.min(99, (100 * m.at) / top)}%` }));
  return bar;
}

function renderUsage() {
  if (!changed("usage", [state.users, [...state.usage], state.alarmMicros])) return;
  const body = $("#usage tbody");
  const rows = [];
  for (const u of state.users) {
    const x = state.usage.get(u);
    if (!x) continue;
    $("#usage-day").textContent = `(${x.day}, UTC)`;
    const cap = x.spendCapUSD !== undefined ? Math.round(x.spendCapUSD * 1e6) : 0;
    const markers = [{ at: state.alarmMicros, cls: "alarm", title: `alarm at ${usd(state.alarmMicros)}` }];
    if (cap) markers.push({ at: cap, cls: "cap", title: `cap at ${usd(cap)}` });
    rows.push(el("tr", { dataset: { user: u, turnsUsed: x.turnsUsed, turnsLimit: x.turnsLimit, costMicros: x.costMicros } },
      el("td", {}, u),
      el("td", {}, x.plan),
      el("td", { class: "num turns" }, `${x.turnsUsed} / ${x.turnsLimit}`, meter(x.turnsUsed, x.turnsLimit)),
      el("td", { class: "num cost" }, usd(x.costMicros), meter(x.costMicros, cap || state.alarmMicros, markers)),
      el("td", { class: "alarm" }, `${usd(state.alarmMicros)}${x.spendAlarmRaised ? " · raised" : ""}`),
      el("td", { class: "cap" }, cap ? `${usd(cap)}${x.reservedMicros ? ` (${usd(x.reservedMicros)} reserved)` : ""}` : "none"),
      el("td", {}, jsonButton(`usage of ${u}`, x))));
  }
  body.replaceChildren(...rows);
  if (rows.length === 0) body.append(el("tr", {}, el("td", { colspan: 7, class: "note" }, "No user yet.")));
}

// ---- the form: a turn to an install as a chosen user
const presets = {
  code: "What is 6 * 7?\n\n```python\nprint(6 * 7)\n```",
  slow: "Count to three, slowly.\n\n```python\nimport time\nfor i in range(1, 4):\n    print(i, flush=True)\n    time.sleep(1)\n```",
  chat: "Hello! Who are you?",
  fail: "[do:fail] This fails on an install running on durable-object.",
};

function renderForm() {
  if (!changed("form", [state.installs, [...state.details].map(([k, d]) => [k, d.engineInEffect]), state.users])) return;
  const form = $("#turn-form");
  const inst = form.elements.install;
  const keep = inst.value;
  inst.replaceChildren(...state.installs.map((i) => el("option", { value: i.installId }, `${i.installId} (${(state.details.get(i.installId) || {}).engineInEffect || "?"})`)));
  if (keep && state.installs.some((i) => i.installId === keep)) inst.value = keep;
  renderAs();
}

function renderAs() {
  const form = $("#turn-form");
  const as = form.elements.as;
  const keep = as.value;
  const owner = (state.installs.find((i) => i.installId === form.elements.install.value) || {}).userId;
  const users = [...new Set([owner, ...state.users].filter(Boolean))];
  as.replaceChildren(
    ...users.map((u) => el("option", { value: u }, u === owner ? `${u} (owner)` : u)),
    el("option", { value: "\u0000service" }, "the service (commonly/admin)"),
  );
  as.value = keep && [...as.options].some((o) => o.value === keep) ? keep : owner || "\u0000service";
}

async function sendTurn(ev) {
  ev.preventDefault();
  const form = ev.target;
  const installId = form.elements.install.value;
  const who = form.elements.as.value;
  const result = $("#send-result");
  result.classList.remove("error");
  result.textContent = "Sending…";
  try {
    const client = clientFor(who);
    const { data: accepted, response } = await answer(client.POST("/v1/installs/{installId}/turns", {
      params: { path: { installId }, header: { "Idempotency-Key": crypto.randomUUID() } },
      body: { message: form.elements.message.value },
    }));
    result.textContent = `${response.status}: run ${accepted.runId} ${accepted.status}`;
    const owner = (state.installs.find((i) => i.installId === installId) || {}).userId;
    openRun(accepted.runId, who === "\u0000service" ? owner : who);
    refreshRuns().catch(() => {});
  } catch (err) {
    result.textContent = problem(err);
    result.classList.add("error");
  }
}

// ---- the runs, newest first, through GET /v1/users/{userId}/runs
async function refreshRuns() {
  const pages = await Promise.all(state.users.map((userId) => listRuns(service, { userId, limit: 50 })));
  const all = pages.flatMap((p) => p.runs);
  all.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  state.runs = all.slice(0, 100);
  renderRuns();
}

function runDuration(r) {
  const end = r.completedAt ? Date.parse(r.completedAt) : Date.now();
  return end - Date.parse(r.createdAt);
}

function renderRuns() {
  const open = state.runs.filter((r) => !isFinal(r)).map((r) => [r.runId, duration(runDuration(r))]);
  if (!changed("runs", [state.runs, view.runId, open])) return;
  const body = $("#runs tbody");
  body.replaceChildren(
    ...state.runs.map((r) =>
      el("tr", { class: `clickable${r.runId === view.runId ? " selected" : ""}`, tabindex: 0, dataset: { run: r.runId, status: r.status, costMicros: r.costMicros },
        onclick: () => openRun(r.runId, r.userId), onkeydown: (e) => { if (e.key === "Enter") openRun(r.runId, r.userId); } },
        el("td", { title: r.createdAt }, time(r.createdAt)),
        el("td", {}, r.userId),
        el("td", {}, r.installId),
        el("td", {}, el("span", { class: `badge ${r.status}` }, r.status)),
        el("td", {}, r.engine),
        el("td", {}, r.model || ""),
        el("td", { class: "num" }, int(r.tokens.total)),
        el("td", { class: "num" }, usd(r.costMicros)),
        el("td", { class: "num" }, duration(runDuration(r)) + (isFinal(r) ? "" : " …")),
        el("td", {}, r.errorKind || ""),
        el("td", {}, jsonButton(`run ${r.runId}`, r))),
    ),
  );
  if (state.runs.length === 0) body.append(el("tr", {}, el("td", { colspan: 11, class: "note" }, "No run yet: send a turn.")));
}

// ---- a run: its transcript as it happens (watchRun), its trace
const view = { runId: "", userId: "", abort: null, run: null, events: [], answer: "" };

function openRun(runId, userId) {
  if (view.abort) view.abort.abort();
  Object.assign(view, { runId, userId, abort: new AbortController(), run: null, events: [], answer: "" });
  history.replaceState(null, "", `#run=${encodeURIComponent(runId)}&user=${encodeURIComponent(userId)}`);
  $("main").classList.add("open");
  $("#run").hidden = false;
  $("#run-id").textContent = runId;
  $("#events").replaceChildren();
  $("#answer").textContent = "";
  $("#run-summary").textContent = "";
  $("#waterfall").replaceChildren();
  $("#trace-note").textContent = "";
  selectTab("transcript");
  renderRuns();
  readRun().catch((err) => status(`run ${runId}: ${problem(err)}`, true));
  watch(view.runId, view.userId, view.abort.signal);
}

async function readRun() {
  const id = view.runId;
  const run = await data(service.GET("/v1/runs/{runId}", { params: { path: { runId: id } } }));
  if (view.runId !== id) return;
  view.run = run;
  $("#run-stop").hidden = isFinal(run);
  const dur = run.completedAt ? duration(Date.parse(run.completedAt) - Date.parse(run.createdAt)) : "";
  $("#run-summary").replaceChildren(
    el("span", { class: `badge ${run.status}` }, run.status), " ",
    `${run.engine}${run.model ? ` · ${run.model}` : ""} · install ${run.installId} · user ${run.userId} · ${int(run.tokens.total)} tokens · `,
    el("span", { class: "run-cost", dataset: { costMicros: run.costMicros } }, usd(run.costMicros)),
    dur ? ` · ${dur}` : "",
    run.errorKind ? ` · ${run.errorKind}` : "",
  );
  return run;
}

async function watch(runId, userId, signal) {
  $("#stream-state").textContent = "(streaming)";
  try {
    const finished = await watchRun(origin, userId ? asUser(userId) : asService, runId, (e) => {
      if (view.runId === runId) addEvent(e);
    }, { signal });
    if (view.runId !== runId) return;
    $("#stream-state").textContent = `(finished: ${finished.status})`;
    await readRun();
    refreshRuns().catch(() => {});
    loadTrace(runId);
  } catch (err) {
    if (signal.aborted) return;
    $("#stream-state").textContent = `(stopped: ${problem(err)})`;
  }
}

function addEvent(e) {
  view.events.push(e);
  const line = describe(e);
  const li = el("li", { class: `${e.type.replace(".", "-")}${line.bad ? " failed" : ""}`, dataset: { id: e.id, type: e.type } },
    el("span", { class: "id" }, `#${e.id}`),
    el("div", { class: "what" }, el("span", { class: "type" }, e.type), " ", line.text, line.pre ? el("pre", {}, line.pre) : null),
    jsonButton(`event ${e.id} (${e.type})`, e));
  if (e.type === "run.finished") {
    li.dataset.costMicros = e.costMicros;
    li.dataset.status = e.status;
  }
  if (e.type === "text.delta") {
    view.answer += e.text;
    $("#answer").textContent = view.answer;
  }
  if (e.type === "run.finished" && e.finalMessage && !view.answer) {
    $("#answer").textContent = e.finalMessage;
  }
  $("#events").append(li);
}

function pretty(args) {
  try {
    const v = JSON.parse(args);
    if (v && typeof v.code === "string") return `${v.language ? `(${v.language})\n` : ""}${v.code}`;
    return JSON.stringify(v, null, 2);
  } catch {
    return args;
  }
}

function describe(e) {
  switch (e.type) {
    case "run.started":
      return { text: `on ${e.engine}${e.model ? `, model ${e.model}` : ""}` };
    case "model.started":
      return { text: `step ${e.step}: ${e.model} called` };
    case "model.finished":
      return {
        text: `step ${e.step}: ${int(e.promptTokens)} in (${int(e.cachedPromptTokens)} cached) / ${int(e.completionTokens)} out · ${duration(e.latencyMs)} · ${usd(e.costMicros)}${e.estimated ? " (estimated)" : ""}${e.errorKind ? ` · ${e.errorKind}` : ""}`,
        bad: Boolean(e.errorKind),
      };
    case "text.delta":
      return { text: JSON.stringify(e.text) };
    case "tool.started":
      return { text: `${e.name} (${e.callId})`, pre: pretty(e.args) };
    case "tool.finished":
      return { text: `${e.name} ${e.ok ? "ok" : `failed: ${e.errorKind}`} in ${duration(e.durationMs)}`, pre: e.output, bad: !e.ok };
    case "sandbox.created":
      return { text: `${e.sandboxId} (${e.provider})` };
    case "sandbox.killed": {
      const made = view.events.find((x) => x.type === "sandbox.created" && x.sandboxId === e.sandboxId);
      const life = made ? `, after ${duration(Date.parse(e.at) - Date.parse(made.at))}` : "";
      return { text: `${e.sandboxId}${life}${e.ok ? "" : " (the kill failed: the reaper will retry)"}`, bad: !e.ok };
    }
    case "run.resumed":
      return { text: `attempt ${e.attempt} took over from attempt ${e.lostAttempt} (it stopped during: ${e.inFlight}; it may have cost ${usd(e.lostMicros)} more than it recorded)`, bad: true };
    case "run.finished":
      return {
        text: `${e.status}${e.errorKind ? ` (${e.errorKind}${e.errorMessage ? `: ${e.errorMessage}` : ""})` : ""} · ${int(e.tokens.total)} tokens · ${usd(e.costMicros)}${e.refunded ? " · refunded" : ""}`,
        bad: e.status !== "succeeded",
      };
    default:
      return { text: "" };
  }
}

// ---- the trace, as a waterfall, from the stack's span file
async function loadTrace(runId) {
  const run = view.run;
  const note = $("#trace-note");
  if (!state.traces) {
    note.textContent = "This stack writes no spans: start it with TRACES_FILE set (make run sets it).";
    return;
  }
  if (!run || !run.traceId) {
    note.textContent = "This run has no trace id.";
    return;
  }
  const res = await fetch(`/console/api/traces/${run.traceId}`);
  if (!res.ok) {
    note.textContent = `trace ${run.traceId}: ${res.status} ${await res.text()}`;
    return;
  }
  const trace = await res.json();
  if (view.runId !== runId) return;
  drawWaterfall(trace);
}

function drawWaterfall(trace) {
  const spans = trace.spans;
  const note = $("#trace-note");
  const box = $("#waterfall");
  if (spans.length === 0) {
    note.textContent = `No span of trace ${trace.traceId} yet.`;
    box.replaceChildren();
    return;
  }
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map();
  for (const s of spans) {
    const p = ids.has(s.parentId) ? s.parentId : "";
    if (!children.has(p)) children.set(p, []);
    children.get(p).push(s);
  }
  const t0 = Math.min(...spans.map((s) => Date.parse(s.start)));
  const total = Math.max(1, Math.max(...spans.map((s) => Date.parse(s.end))) - t0);
  const rows = [];
  const walk = (parent, depth) => {
    for (const s of children.get(parent) || []) {
      const a = s.attributes;
      const genai = a["gen_ai.operation.name"] !== undefined;
      const bits = [];
      if (a["gen_ai.usage.input_tokens"] !== undefined) bits.push(`${a["gen_ai.usage.input_tokens"]} in / ${a["gen_ai.usage.output_tokens"]} out`);
      if (a["commonly.cost_micros"] !== undefined) bits.push(usd(a["commonly.cost_micros"]));
      if (a["commonly.run.status"] !== undefined) bits.push(a["commonly.run.status"]);
      if (s.status === "Error") bits.push(`error ${a["error.type"] || ""}`);
      const left = ((Date.parse(s.start) - t0) / total) * 100;
      const width = Math.max(0.3, (s.durationMs / total) * 100);
      rows.push(el("div", { class: `span${genai ? " genai" : ""}${s.status === "Error" ? " error" : ""}`, role: "button", tabindex: 0, dataset: { span: s.spanId, name: s.name, durationMs: s.durationMs },
        title: "the span's attributes", onclick: () => showJSON(`span ${s.name}`, s), onkeydown: (e) => { if (e.key === "Enter") showJSON(`span ${s.name}`, s); } },
        el("div", { class: "name", style: `padding-left:${depth * 0.9}rem` }, s.name, bits.length ? el("small", {}, bits.join(" · ")) : null),
        el("div", { class: "track" },
          el("b", { style: `left:${left}%;width:${width}%` }),
          durationLabel(s.durationMs, left, width))));
      walk(s.spanId, depth + 1);
    }
  };
  walk("", 0);
  note.replaceChildren(`Trace ${trace.traceId}: ${spans.length} spans over ${duration(total)}. Click a span for its attributes. `, jsonButton(`trace ${trace.traceId}`, trace));
  box.replaceChildren(...rows);
}

// durationLabel puts a span's duration after its bar, or inside it when
// the bar reaches the right edge, or before it when the bar is short there.
function durationLabel(ms, left, width) {
  if (left + width <= 75) return el("em", { style: `left:calc(${left + width}% + .3rem)` }, duration(ms));
  if (width >= 15) return el("em", { class: "inside", style: `right:calc(${100 - left - width}% + .3rem)` }, duration(ms));
  return el("em", { style: `right:calc(${100 - left}% + .3rem)` }, duration(ms));
}

function selectTab(which) {
  for (const t of ["transcript", "trace"]) {
    $(`#tab-${t}`).setAttribute("aria-selected", String(t === which));
    $(`#${t}`).hidden = t !== which;
  }
  if (which === "trace" && view.run && isFinal(view.run)) loadTrace(view.runId);
}

// ---- start
async function tick() {
  try {
    await refreshStack();
    await refreshRuns();
    status(`Local stack at ${origin} · ${state.installs.length} installs · ${state.users.length} users · updated ${new Date().toLocaleTimeString("en-GB", { hour12: false })}`);
  } catch (err) {
    status(problem(err), true);
  }
}

function start() {
  $("#turn-form").addEventListener("submit", sendTurn);
  $("#turn-form").elements.install.addEventListener("change", renderAs);
  for (const b of document.querySelectorAll("[data-preset]")) {
    b.addEventListener("click", () => { $("#turn-form").elements.message.value = presets[b.dataset.preset]; });
  }
  $("#turn-form").elements.message.value = presets.code;
  $("#json-close").addEventListener("click", () => $("#json-dialog").close());
  $("#run-json").addEventListener("click", async () => showJSON(`AgentRun ${view.runId}`, await readRun()));
  // Stop: the run's owner asks it to stop (POST /v1/runs/{runId}/cancel);
  // the transcript shows it end, cancelled, through watchRun.
  $("#run-stop").addEventListener("click", async () => {
    try {
      const res = await cancelRun(view.userId ? clientFor(view.userId) : service, view.runId);
      status(`run ${res.runId}: cancel ${res.cancel.replace("_", " ")}`);
      if (res.cancel === "too_late" || res.cancel === "already_final") $("#run-stop").hidden = true;
    } catch (err) {
      status(`stop ${view.runId}: ${problem(err)}`, true);
    }
  });
  $("#run-close").addEventListener("click", () => {
    if (view.abort) view.abort.abort();
    view.runId = "";
    $("#run").hidden = true;
    $("main").classList.remove("open");
    history.replaceState(null, "", location.pathname);
    renderRuns();
  });
  $("#tab-transcript").addEventListener("click", () => selectTab("transcript"));
  $("#tab-trace").addEventListener("click", () => selectTab("trace"));
  const linked = new URLSearchParams(location.hash.slice(1));
  tick().then(() => {
    if (linked.get("run")) openRun(linked.get("run"), linked.get("user") || "");
  });
  setInterval(tick, 2000);
}

start();
