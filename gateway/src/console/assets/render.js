// Building the page from a frame. Every string a backend, a client or the config controls
// (names, addresses, reasons, tool names) becomes a text node: nothing here parses HTML.

/** An element `tag` with `attrs` (set one by one, never as markup) and `children` (strings
 * become text nodes). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = String(value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(typeof child === "string" || typeof child === "number"
      ? document.createTextNode(String(child)) : child);
  }
  return node;
}

const numberCell = (v, digits = 0) =>
  el("td", { class: "num" }, v === null || v === undefined ? "–" : Number(v).toFixed(digits));

/** `ms` (wall clock) as local time of day. */
export function clock(ms) {
  return ms ? new Date(ms).toLocaleTimeString() : "–";
}

/** How long ago `ms` was, from `now`. */
export function ago(ms, now) {
  if (!ms) return "–";
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s ago`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m ago`;
}

export function renderRoutes(tbody, routes) {
  tbody.replaceChildren(...routes.map((r) => {
    const codes = Object.entries(r.errors || {}).map(([code, n]) => `${code}: ${n}`).join(", ");
    return el("tr", { "data-route": r.route },
      el("td", {}, r.route), el("td", {}, r.mode), el("td", {}, r.pool || "–"),
      numberCell(r.rps, 1), numberCell(r.errorsPerSecond, 2),
      numberCell(r.p50, 1), numberCell(r.p99, 1),
      el("td", { class: codes ? "error" : "muted" }, codes || "none"));
  }));
}

function credentials(c) {
  if (!c.kinds.length) return el("span", { class: "muted" }, "no backend credentials");
  const parts = [`credentials: ${c.kinds.join(", ")}`];
  for (const h of c.headers) parts.push(`${h.header} from ${h.from}${h.error ? ` (unreadable: ${h.error})` : ""}`);
  const token = c.token || (c.exchange && c.exchange.own);
  if (token) {
    parts.push(token.ageSeconds === null ? "no token yet"
      : `token ${token.ageSeconds}s old, usable ${token.expiresInSeconds}s more`);
    if (token.lastFailure) parts.push(`last refresh failed ${token.lastFailure.agoSeconds}s ago: ${token.lastFailure.reason}`);
  }
  if (c.exchange) parts.push(`${c.exchange.callers} callers' tokens held`);
  const failing = c.headers.some((h) => h.error) || (token && token.lastFailure);
  return el("span", { class: failing ? "error" : "" }, parts.join(" · "));
}

function backendRow(pool, b, now, actions) {
  const failure = b.lastFailure ? `${b.lastFailure.what}, ${ago(b.lastFailure.at, now)}` : "–";
  const button = actions.enabled()
    ? el("button", { type: "button", "data-action": b.state === "draining" ? "undrain" : "drain" },
      b.state === "draining" ? "undrain" : "drain")
    : null;
  if (button) button.addEventListener("click", () => actions.drain(pool, b.address, b.state !== "draining"));
  return el("tr", { "data-backend": b.address, "data-state": b.state },
    el("td", {}, b.address),
    el("td", {}, el("span", { class: "badge", "data-state": b.state }, b.state)),
    el("td", {}, b.since ? ago(b.since, now) : "–"),
    el("td", {}, b.era || "unknown"),
    numberCell(b.sessions), numberCell(b.inflight), numberCell(b.tasks),
    el("td", { class: b.lastFailure ? "error" : "muted" }, failure),
    el("td", {}, button));
}

export function renderPools(root, pools, now, actions) {
  root.replaceChildren(...pools.map((p) => el("div", { class: "pool", "data-pool": p.pool },
    el("div", { class: "pool-head" },
      el("span", { class: "pool-name" }, `pool ${p.pool}`),
      credentials(p.credentials),
      el("span", { class: "muted" }, `tasks: ${p.tasks.open} open of ${p.tasks.records}`)),
    el("table", {},
      el("thead", {}, el("tr", {}, ...["backend", "state", "since", "era", "sessions", "in flight",
        "tasks", "last failure", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...p.backends.map((b) => backendRow(p.pool, b, now, actions)))))));
}

export function renderSessions(root, frame) {
  const s = frame.store;
  const rows = frame.pools.flatMap((p) => p.backends.map((b) =>
    el("tr", { "data-sessions-of": b.address }, el("td", {}, p.pool), el("td", {}, b.address), numberCell(b.sessions))));
  root.replaceChildren(
    el("p", {}, `store: ${s.kind}, `, el("span", { class: s.ready ? "" : "error" },
      s.ready ? "answering" : `not answering: ${s.error}`),
      `, ${s.sessions === null ? "?" : s.sessions} sessions live`),
    el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "pool"), el("th", {}, "backend"), el("th", {}, "sessions"))),
      el("tbody", {}, ...rows)));
}

function eventText(e) {
  switch (e.kind) {
    case "reinitialized":
      return [`session ${e.session} moved ${e.from} → ${e.to}`, `${e.reason}, ${e.trigger}`];
    case "move-failed": return [`session ${e.session} could not move off ${e.from}`, e.reason];
    case "lost": return [`session ${e.session} lost (was on ${e.from})`, e.reason];
    case "request-lost": return [`a ${e.reason} of session ${e.session} lost its answer on ${e.from}`, ""];
    case "config-applied": return ["config reloaded", ""];
    case "config-rejected": return ["config reload refused: the running config is kept", ""];
    default: return [`${e.from} is ${e.kind.replace("backend-", "")}`, `pool ${e.pool}`];
  }
}

export function renderTimeline(root, events) {
  root.replaceChildren(...events.slice().reverse().map((e) => {
    const [what, why] = eventText(e);
    return el("li", { "data-kind": e.kind, "data-from": e.from, "data-to": e.to },
      el("span", { class: "time" }, clock(e.at)), el("span", { class: "what" }, what),
      why ? el("span", { class: "muted" }, ` (${why})`) : null);
  }));
}

function memberRow(m) {
  const state = el("span", { class: "badge", "data-state": m.state }, `${m.state} (${m.backendsUp}/${m.backends})`);
  const counts = `${m.toolCount} tools, ${m.promptCount} prompts, ${m.resourceCount} resources `;
  const names = m.tools.map((t) => el("span", { class: "name" }, t));
  return el("tr", { "data-member": m.name },
    el("td", {}, m.name), el("td", {}, m.pool || "–"), el("td", {}, m.mode), el("td", {}, state),
    el("td", { class: "names" }, counts, ...names),
    numberCell(m.collisions), numberCell(m.leftOut));
}

export function renderVirtual(root, servers) {
  if (!servers.length) {
    root.replaceChildren(el("p", { class: "muted" }, "no virtual routes"));
    return;
  }
  const heads = ["member", "pool", "mode", "state", "names exposed", "collisions", "left out"];
  root.replaceChildren(...servers.map((v) => el("div", { class: "pool", "data-virtual": v.route },
    el("div", { class: "pool-head" }, el("span", { class: "pool-name" }, v.route),
      el("span", { class: "muted" }, `server ${v.server.name} ${v.server.version}`)),
    el("table", {},
      el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", {}, h)))),
      el("tbody", {}, ...v.members.map(memberRow))))));
}

export function renderAdmission(root, a) {
  const caps = a.caps.map((c) => el("tr", {}, el("td", {}, c.scope), el("td", {}, c.what),
    el("td", { class: "num" }, `${c.used} / ${c.limit}`)));
  const refusals = Object.entries(a.refusals).map(([why, n]) => `${why}: ${n}`).join(", ");
  root.replaceChildren(
    caps.length ? el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "scope"), el("th", {}, "cap"),
      el("th", {}, "in use"))), el("tbody", {}, ...caps)) : el("p", { class: "muted" }, "no concurrency caps configured"),
    el("p", {}, "refusals since start: ", el("span", { class: refusals ? "error" : "muted" }, refusals || "none")));
}
