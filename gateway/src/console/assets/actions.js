// The operator's actions: drain and undrain, through the admin API, with the admin token the
// operator typed in (sent as `Authorization`: never a cookie, so no other site's page can make
// the browser act with it). The token is kept in this tab's sessionStorage: a reload keeps
// watching without asking again, closing the tab forgets it, other tabs and sites never see
// it; the price is that a script running in this page could read it, which the page's policy
// (its own files only, no inline code, every string written as text) is there to prevent.
// Kept in memory only, a reload would ask for it again.

const KEY = "mcpgw-admin-token";

export const actions = {
  token: () => sessionStorage.getItem(KEY),
  enabled: () => Boolean(sessionStorage.getItem(KEY)),
  remember(token) { sessionStorage.setItem(KEY, token); },
  forget() { sessionStorage.removeItem(KEY); },
  /** Drains (or undrains) `backend` of `pool`; the answer's message, or an error. */
  async drain(pool, backend, on) {
    const query = new URLSearchParams({ pool, backend });
    const path = `/admin/backends/${on ? "drain" : "undrain"}?${query}`;
    const answer = await fetch(path, {
      method: "POST",
      headers: { Authorization: `Bearer ${this.token()}` },
      credentials: "omit",
      cache: "no-store",
    });
    const body = await answer.json().catch(() => ({}));
    if (!answer.ok) {
      if (answer.status === 401) this.forget();
      actions.onResult(`${on ? "drain" : "undrain"} refused (${answer.status}): ${body.error?.message || body.error || ""}`, false);
      return;
    }
    actions.onResult(`${backend} of ${pool} is ${body.state}`, true);
  },
  /** The admin API's tool pins (`GET /admin/tool-pins`), or `null` when refused. */
  async pins() {
    const answer = await fetch("/admin/tool-pins", {
      headers: { Authorization: `Bearer ${this.token()}` },
      credentials: "omit",
      cache: "no-store",
    });
    if (answer.status === 401) this.forget();
    return answer.ok ? answer.json() : null;
  },
  /** Approves (or rejects) the waiting definition `fingerprint` of `tool` in `pool`. */
  async decidePin(pool, tool, fingerprint, approve) {
    const query = new URLSearchParams({ pool, tool, fingerprint });
    const path = `/admin/tool-pins/${approve ? "approve" : "reject"}?${query}`;
    const answer = await fetch(path, {
      method: "POST",
      headers: { Authorization: `Bearer ${this.token()}` },
      credentials: "omit",
      cache: "no-store",
    });
    const body = await answer.json().catch(() => ({}));
    if (!answer.ok) {
      if (answer.status === 401) this.forget();
      actions.onResult(`${approve ? "approve" : "reject"} refused (${answer.status}): ${body.error?.message || body.error || ""}`, false);
      return;
    }
    actions.onResult(`${tool} of ${pool}: ${body.decision}`, true);
    actions.onPins();
  },
  onResult: () => {},
  onPins: () => {},
};
