// Tool pinning in the console: each pinned pool's definitions that wait for an operator, with
// the fields that changed (old and new, as text), and approve and reject buttons. The list is
// the admin API's `GET /admin/tool-pins`, asked with the operator's token every 5 s (the API
// needs the token: without one the section says so). A decision is `POST
// /admin/tool-pins/approve` or `/reject` with the fingerprint shown, so a definition that
// changed again since is not approved blind.

import { el } from "/console/render.js";

const text = (v) => (v === undefined ? "(absent)" : JSON.stringify(v, null, 2));

function diffRows(w) {
  return w.diff.map((d) => el("tr", {},
    el("td", {}, d.field),
    el("td", {}, el("pre", { class: "old" }, text(d.old))),
    el("td", {}, el("pre", { class: "new" }, text(d.new)))));
}

function pendingEntry(pool, w, actions) {
  const buttons = actions.enabled() && w.state === "pending" ? [
    el("button", { type: "button", "data-action": "approve" }, "approve"),
    el("button", { type: "button", "data-action": "reject" }, "reject"),
  ] : [];
  const [approve, reject] = buttons;
  if (approve) approve.addEventListener("click", () => actions.decidePin(pool, w.tool, w.new.fingerprint, true));
  if (reject) reject.addEventListener("click", () => actions.decidePin(pool, w.tool, w.new.fingerprint, false));
  return el("div", { class: "pin", "data-tool": w.tool, "data-state": w.state },
    el("div", { class: "pool-head" },
      el("span", { class: "pool-name" }, w.tool),
      el("span", { class: "badge", "data-state": w.state }, `${w.kind}, ${w.state}`),
      el("span", { class: "muted" }, w.new.fingerprint), ...buttons),
    el("table", {},
      el("thead", {}, el("tr", {}, el("th", {}, "field"), el("th", {}, "pinned"), el("th", {}, "now"))),
      el("tbody", {}, ...diffRows(w))));
}

/** Draws the answer of `GET /admin/tool-pins` (or why there is none) into `root`. */
export function renderPins(root, answer, actions) {
  if (!actions.enabled()) {
    root.replaceChildren(el("p", { class: "muted" }, "set the admin token to see tool definitions waiting for approval"));
    return;
  }
  if (!answer) {
    root.replaceChildren(el("p", { class: "muted" }, "loading…"));
    return;
  }
  if (!answer.pools.length) {
    root.replaceChildren(el("p", { class: "muted" }, "no pool pins its tools"));
    return;
  }
  root.replaceChildren(...answer.pools.map((p) => el("div", { class: "pool", "data-pins": p.pool },
    el("div", { class: "pool-head" }, el("span", { class: "pool-name" }, p.pool),
      el("span", { class: "muted" }, `${p.mode}, ${p.tools} tools pinned, ${p.pending.length} waiting`)),
    ...p.pending.map((w) => pendingEntry(p.pool, w, actions)))));
}
