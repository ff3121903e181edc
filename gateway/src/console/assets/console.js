// The console: one event stream from the admin listener, a frame a second; the page keeps the
// last 15 minutes of samples and the latest events, and draws everything again per frame.

import { renderAdmission, renderPools, renderRoutes, renderSessions, renderTimeline, renderVirtual, clock } from "/console/render.js";
import { lineChart, seriesOf } from "/console/charts.js";
import { actions } from "/console/actions.js";

const SAMPLES = 900;
const EVENTS = 300;
const $ = (id) => document.getElementById(id);

const page = { samples: [], events: [], frame: null, frames: 0, note: "" };

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

function connect() {
  const stream = new EventSource("/console/events");
  stream.addEventListener("open", () => {
    $("status").dataset.state = "live";
    $("status").textContent = "live";
    // a new stream starts with everything held: forget what the old one sent
    page.samples = [];
    page.events = [];
  });
  stream.addEventListener("snapshot", (e) => take(JSON.parse(e.data)));
  stream.addEventListener("error", () => {
    $("status").dataset.state = "lost";
    $("status").textContent = "reconnecting…";
  });
}

function showMode() {
  const operator = actions.enabled();
  $("mode").dataset.mode = operator ? "operator" : "read-only";
  $("mode").textContent = operator ? "token set: actions on" : "read-only";
  $("token-forget").hidden = !operator;
  draw();
}

$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const token = $("token").value.trim();
  if (token) actions.remember(token);
  $("token").value = "";
  showMode();
});
$("token-forget").addEventListener("click", () => { actions.forget(); showMode(); });
actions.onResult = (message) => { page.note = message; showMode(); };

showMode();
connect();
