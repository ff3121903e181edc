// The console: one event stream from the admin listener, a frame a second; the page keeps the
// last 15 minutes of samples and the latest events, and draws everything again per frame.

import { renderAdmission, renderPools, renderRoutes, renderSessions, renderTimeline, renderVirtual, clock } from "/console/render.js";
import { lineChart, seriesOf } from "/console/charts.js";
import { actions } from "/console/actions.js";
import { renderPins } from "/console/pins.js";

const SAMPLES = 900;
const EVENTS = 300;
const $ = (id) => document.getElementById(id);

const page = { samples: [], events: [], frame: null, frames: 0, note: "", stream: null, retry: 0, connects: 0, pins: null };

function draw() {
  const f = page.frame;
  if (!f) return;
  const version = `config version ${f.config.version}, loaded ${clock(f.config.loadedAt)}`;
  const reload = f.config.lastReload ? `; last reload ${f.config.lastReload.result} at ${clock(f.config.lastReload.at)}` : "";
  $("config").textContent = version + reload;
  renderRoutes($("routes").tBodies[0], f.routes);
  renderPools($("pools"), f.pools, f.at, actions);
  renderSessions($("sessions"), f);
  renderTimeline($("timeline"), page.events);
  renderVirtual($("virtual"), f.virtual);
  renderAdmission($("admission"), f.admission);
  renderPins($("pins"), page.pins, actions);
  lineChart($("chart-rps"), seriesOf(page.samples, (s) => s.r.map((r) => [r[0], r[1]])));
  lineChart($("chart-p99"), seriesOf(page.samples, (s) => s.r.map((r) => [r[0], r[4]])), " ms");
  lineChart($("chart-sessions"), seriesOf(page.samples, (s) => s.b.map((b) => [b[1], b[3]])));
  $("footer").textContent = `${page.note ? page.note + " · " : ""}frame ${page.frames} at ${clock(f.at)}; ` +
    `sampling costs ${f.samplerMicros} µs a second; ${page.samples.length} samples held`;
  document.body.dataset.frames = String(page.frames);
}

function take(frame) {
  page.frame = frame;
  page.frames += 1;
  page.samples.push(...frame.samples);
  page.samples.splice(0, Math.max(0, page.samples.length - SAMPLES));
  page.events.push(...frame.events);
  page.events.sort((a, b) => a.at - b.at);
  page.events.splice(0, Math.max(0, page.events.length - EVENTS));
  draw();
}

// With `admin-token` set the stream needs the token; `EventSource` cannot send headers, so
// the page mints a one-use ticket with the token (`POST /admin/console/ticket`, in
// `Authorization`) and opens the stream with it. A ticket opens one stream only: when the
// stream breaks the page closes it and mints another (the browser's own reconnect would reuse
// the spent ticket). Without a token set, the ticket is `null` and the stream needs none.
async function ticket() {
  const token = actions.token();
  const answer = await fetch("/admin/console/ticket", {
    method: "POST",
    headers: token ? { Authorization: `Bearer ${token}` } : {},
    credentials: "omit",
    cache: "no-store",
  });
  if (answer.status === 401) {
    if (token) actions.forget();
    return { needed: true };
  }
  if (!answer.ok) throw new Error(`ticket refused (${answer.status})`);
  return { ticket: (await answer.json()).ticket };
}

function status(state, text) {
  $("status").dataset.state = state;
  $("status").textContent = text;
}

async function connect() {
  clearTimeout(page.retry);
  if (page.stream) page.stream.close();
  page.stream = null;
  // only the latest connect opens a stream (a token typed in while one waits for its ticket)
  const mine = ++page.connects;
  let got;
  try {
    got = await ticket();
  } catch {
    if (mine !== page.connects) return;
    status("lost", "reconnecting…");
    page.retry = setTimeout(connect, 2000);
    return;
  }
  if (mine !== page.connects) return;
  if (got.needed) {
    // nothing is shown until the operator gives the token: the stream is theirs only
    status("locked", "give the admin token to watch");
    showMode();
    return;
  }
  const path = got.ticket ? `/console/events?ticket=${encodeURIComponent(got.ticket)}` : "/console/events";
  const stream = new EventSource(path);
  page.stream = stream;
  stream.addEventListener("open", () => {
    status("live", "live");
    // a new stream starts with everything held: forget what the old one sent
    page.samples = [];
    page.events = [];
  });
  stream.addEventListener("snapshot", (e) => take(JSON.parse(e.data)));
  stream.addEventListener("error", () => {
    stream.close();
    if (page.stream !== stream) return;
    page.stream = null;
    status("lost", "reconnecting…");
    page.retry = setTimeout(connect, 2000);
  });
}

function showMode() {
  const operator = actions.enabled();
  $("mode").dataset.mode = operator ? "operator" : "read-only";
  $("mode").textContent = operator ? "token set: actions on" : "no token";
  $("token-forget").hidden = !operator;
  draw();
}

$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const token = $("token").value.trim();
  if (token) actions.remember(token);
  $("token").value = "";
  showMode();
  connect();
  loadPins();
});
$("token-forget").addEventListener("click", () => { actions.forget(); showMode(); });
actions.onResult = (message) => { page.note = message; showMode(); };

// the tool pins come from the admin API (with the token), every 5 s and after a decision
async function loadPins() {
  page.pins = actions.enabled() ? await actions.pins().catch(() => null) : null;
  renderPins($("pins"), page.pins, actions);
}
actions.onPins = loadPins;
setInterval(loadPins, 5000);

showMode();
connect();
loadPins();
