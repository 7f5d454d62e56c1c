// ragfuse console: reads the server's status and live feed and renders
// them; plain JavaScript, no dependencies, nothing fetched from elsewhere.
"use strict";

(() => {
  const SOURCES = ["cache", "primary", "fallback", "stale_cache", "retrieval", "static", "error"];
  const BUCKET_MS = 10000;     // the chart's bar width
  const HISTORY_BUCKETS = 30;  // five minutes of bars
  const MAX_QUESTIONS = 25;    // rows of the latest questions
  const POLL_MS = 1000;
  // The fault switches of the demo, in the order shown.
  const FAULT_CHOICES = [
    { label: "ok", fault: null },
    { label: "hang", fault: { mode: "hang" } },
    { label: "slow 3s", fault: { mode: "latency", delay: "3s" } },
    { label: "HTTP 503", fault: { mode: "status", status: 503 } },
    { label: "HTTP 401", fault: { mode: "status", status: 401 } },
    { label: "429", fault: { mode: "rate_limit", retry_after: "10s" } },
    { label: "reset", fault: { mode: "reset" } },
  ];

  const state = {
    settings: { demo: false, feed: "", show_questions: false, version: "" },
    status: null,
    skew: 0,             // server clock minus this page's, in ms
    history: new Map(),  // bucket number -> {source: count}
    questions: [],       // newest first
    faults: {},          // demo model -> fault in force
    modes: [],           // the fault modes the server accepts
    session: "console-" + Math.random().toString(36).slice(2, 10),
  };

  const $ = (id) => document.getElementById(id);

  // h builds an element: attrs sets attributes ("class", "data-…", on…
  // handlers), kids are nodes or strings (always text, never HTML).
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat()) {
      if (kid === undefined || kid === null || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }

  function setText(el, text) {
    text = text === undefined || text === null ? "" : String(text);
    if (el.textContent !== text) el.textContent = text;
  }

  function setClass(el, cls) {
    if (el.className !== cls) el.className = cls;
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const now = () => Date.now() + state.skew;

  // ---- talking to the server -------------------------------------------

  function authHeaders() {
    const key = $("admin-key").value.trim();
    return key ? { Authorization: "Bearer " + key } : {};
  }

  // request sends one request and never throws: it resolves to
  // {ok, status, body, date}, status 0 when the server was not reached.
  async function request(method, path, body) {
    const headers = { Accept: "application/json", ...authHeaders() };
    const init = { method, headers, cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    try {
      const res = await fetch(path, init);
      let data = null;
      try { data = await res.json(); } catch (_) { data = null; }
      return { ok: res.ok, status: res.status, body: data, date: res.headers.get("Date") };
    } catch (_) {
      return { ok: false, status: 0, body: null, date: null };
    }
  }

  function errorText(r) {
    if (r.status === 0) return "the server did not answer";
    const e = r.body && r.body.error;
    const msg = e ? (e.code ? e.code + ": " : "") + (e.message || "") : "";
    return "HTTP " + r.status + (msg ? " (" + msg + ")" : "");
  }

  function noteClock(date) {
    const t = Date.parse(date || "");
    if (Number.isNaN(t)) return;
    const skew = t - Date.now();
    state.skew = Math.abs(skew) > 2000 ? skew : 0; // the header has whole seconds
  }

  function setConn(ok, text) {
    const el = $("conn");
    setClass(el, "pill " + (ok ? "pill-ok" : "pill-bad"));
    setText(el, text);
  }

  function notice(text) {
    const el = $("notice");
    el.hidden = !text;
    setText(el, text || "");
  }

  async function poll() {
    for (;;) {
      await refresh();
      await sleep(POLL_MS);
    }
  }

  async function refresh() {
    const r = await request("GET", "/v1/status");
    if (r.ok && r.body) {
      noteClock(r.date);
      onStatus(r.body);
      setConn(true, "live");
      notice("");
      return;
    }
    setConn(false, r.status === 0 ? "server unreachable" : "status refused");
    if (r.status === 401 || r.status === 403) {
      notice("The server wants a key for its status: type the admin key below. (" + errorText(r) + ")");
    }
  }

  // follow reads the server-sent events of url, reconnecting when the
  // stream ends; it turns to polling if the server has no feed.
  async function follow(url) {
    for (;;) {
      let res = null;
      try {
        res = await fetch(url, { headers: { Accept: "text/event-stream", ...authHeaders() }, cache: "no-store" });
      } catch (_) { res = null; }
      if (res && res.status === 404) return poll();
      if (!res || !res.ok || !res.body) {
        setConn(false, res ? "feed refused" : "server unreachable");
        if (res && (res.status === 401 || res.status === 403)) {
          notice("The server wants a key for its live feed: type the admin key below. (HTTP " + res.status + ")");
        }
        await sleep(2000);
        continue;
      }
      noteClock(res.headers.get("Date"));
      setConn(true, "live");
      notice("");
      await readEvents(res.body);
      setConn(false, "reconnecting…");
      await sleep(1000);
    }
  }

  async function readEvents(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value.replace(/\r\n/g, "\n");
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          dispatch(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
      }
    } catch (_) {
      // the stream broke; follow reconnects
    }
  }

  function dispatch(block) {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (data.length === 0) return;
    let msg;
    try { msg = JSON.parse(data.join("\n")); } catch (_) { return; }
    if (event === "status") onStatus(msg);
    else if (event === "question") addQuestion(msg, true);
    else if (event === "history") setHistory(msg);
  }

  // ---- rendering the status --------------------------------------------

  function onStatus(st) {
    state.status = st;
    renderSummary(st);
    renderChain(st);
    renderBreakers(st);
    renderBulkheads(st);
    renderCaches(st);
    renderInstances(st);
    tick();
  }

  function byName(st) {
    const m = new Map();
    for (const b of st.breakers || []) m.set(b.name, b);
    return m;
  }

  function renderSummary(st) {
    const kb = st.knowledge_base || {};
    const kbEl = $("kb");
    if (kb.loaded) setText(kbEl, "knowledge base v" + kb.version);
    else setText(kbEl, "no knowledge base");
    const store = st.store;
    const storeEl = $("store");
    if (store) {
      setText(storeEl, "store " + (store.kind || "?") + ": " + (store.healthy ? "healthy" : "unreachable"));
      setClass(storeEl, "pill " + (store.healthy ? "pill-ok" : "pill-bad"));
    }
    const version = st.version || state.settings.version;
    setText($("version"), version ? "ragfuse " + version : "");
  }

  // sync keeps the children of parent in the order of items, one per key:
  // it creates missing ones with make(item), updates each with
  // update(el, item) and removes those whose key is gone.
  function sync(parent, items, keyOf, make, update) {
    const old = new Map();
    for (const el of Array.from(parent.children)) old.set(el.dataset.key, el);
    let at = 0;
    for (const item of items) {
      const key = keyOf(item);
      let el = old.get(key);
      if (el) old.delete(key);
      else {
        el = make(item);
        el.dataset.key = key;
      }
      update(el, item);
      if (parent.children[at] !== el) parent.insertBefore(el, parent.children[at] || null);
      at++;
    }
    for (const el of old.values()) el.remove();
  }

  function stateOf(b) {
    return b ? b.state : "closed";
  }

  function lastTrip(b) {
    return b && (b.last_trip || b.trip_reason || null);
  }

  // tripText describes a breaker's last trip, e.g. "consecutive_failures:
  // timeout — no answer within 2s, 12s ago".
  function tripText(b) {
    const t = lastTrip(b);
    if (!t) return "";
    if (typeof t === "string") return t;
    const parts = [];
    const cause = t.cause || t.rule;
    if (cause) parts.push(cause);
    const what = [t.kind, t.message].filter(Boolean).join(" — ");
    let s = parts.join("") + (what ? (parts.length ? ": " : "") + what : "");
    const at = Date.parse(t.at || t.time || "");
    if (!Number.isNaN(at)) s += (s ? ", " : "") + ago(at);
    return s;
  }

  function ago(t) {
    const s = Math.max(0, Math.round((now() - t) / 1000));
    if (s < 60) return s + "s ago";
    if (s < 3600) return Math.floor(s / 60) + "m ago";
    return Math.floor(s / 3600) + "h ago";
  }

  function renderChain(st) {
    const breakers = byName(st);
    const bulk = new Map((st.bulkheads || []).map((b) => [b.tier, b]));
    const caches = new Map((st.caches || []).map((c) => [c.tier, c]));
    sync($("chain"), st.tiers || [], (t) => t.name, (t) =>
      h("li", { class: "tier", "data-tier": t.name },
        h("div", { class: "name" }, t.name),
        h("div", { class: "meta", "data-role": "meta" }),
        h("div", {}, h("span", { "data-role": "state" }), " ", h("span", { class: "muted", "data-role": "until" })),
        h("div", { class: "models", "data-role": "models" }),
        h("div", { class: "meta", "data-role": "extra" }),
        h("div", { class: "reason", "data-role": "reason" })),
    (el, t) => {
      const b = breakers.get("tier/" + t.name);
      const s = stateOf(b);
      setClass(el, "tier is-" + s);
      const meta = [t.source];
      if (t.timeout_ms) meta.push("timeout " + fmtMs(t.timeout_ms));
      setText(el.querySelector('[data-role="meta"]'), meta.join(" · "));
      const stEl = el.querySelector('[data-role="state"]');
      setClass(stEl, "state state-" + s);
      setText(stEl, b ? s : "no breaker");
      el.querySelector('[data-role="until"]').dataset.until = b && b.open_until ? b.open_until : "";
      const models = (t.models || []).map((m) => {
        const id = typeof m === "string" ? m : m.id || m.name;
        return id + " " + stateOf(breakers.get("model/" + id));
      });
      setText(el.querySelector('[data-role="models"]'), models.join(", "));
      const extra = [];
      const bh = bulk.get(t.name);
      if (bh) extra.push("bulkhead " + bh.in_flight + "/" + bh.max_concurrent + (bh.queued ? ", " + bh.queued + " queued" : ""));
      const c = caches.get(t.name);
      if (c) extra.push(c.entries + (c.entries === 1 ? " entry" : " entries") + (hitRate(c) !== null ? ", hit rate " + pct(hitRate(c)) : ""));
      setText(el.querySelector('[data-role="extra"]'), extra.join(" · "));
      setText(el.querySelector('[data-role="reason"]'), s === "closed" ? "" : tripText(b));
    });
  }

  // breakerOrder lists the breakers: the chain's tiers in order, then
  // models, then any other.
  function breakerOrder(st) {
    const tiers = (st.tiers || []).map((t) => "tier/" + t.name);
    const rank = (n) => {
      const i = tiers.indexOf(n);
      if (i >= 0) return i;
      return n.startsWith("model/") ? tiers.length : tiers.length + 1;
    };
    return (st.breakers || []).slice().sort((a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name));
  }

  function staticTier(st, name) {
    return (st.tiers || []).some((t) => t.source === "static" && "tier/" + t.name === name);
  }

  function cooldownOf(st, name) {
    if (!name.startsWith("model/")) return null;
    const id = name.slice("model/".length);
    return (st.cooldowns || []).find((c) => c.model === id) || null;
  }

  // probeOf finds what is known of a model's health probe, wherever the
  // status carries it.
  function probeOf(st, b) {
    if (b.probe !== undefined) return b.probe;
    const id = b.name.startsWith("model/") ? b.name.slice("model/".length) : null;
    if (id && Array.isArray(st.probes)) return st.probes.find((p) => p.model === id || p.name === id) || null;
    if (id && st.models && typeof st.models === "object" && !Array.isArray(st.models) && st.models[id]) {
      return st.models[id].probe || null;
    }
    return null;
  }

  function describe(v) {
    if (v === null || v === undefined) return "";
    if (typeof v !== "object") return String(v);
    const main = v.state || v.status || (v.healthy === true ? "healthy" : v.healthy === false ? "unhealthy" : "");
    const rest = Object.entries(v)
      .filter(([k, x]) => !["state", "status", "healthy", "model", "name"].includes(k) && x !== null && typeof x !== "object")
      .map(([k, x]) => k + " " + x);
    return [main, ...rest].filter(Boolean).join(", ");
  }

  function renderBreakers(st) {
    const tbody = $("breakers").tBodies[0];
    sync(tbody, breakerOrder(st), (b) => b.name, (b) =>
      h("tr", { "data-breaker": b.name },
        h("td", {}, b.name),
        h("td", {}, h("span", { "data-role": "state" })),
        h("td", { "data-role": "until" }),
        h("td", { "data-role": "counts" }),
        h("td", { "data-role": "cooldown" }),
        h("td", { "data-role": "probe" }),
        h("td", { class: "reason", "data-role": "reason" }),
        h("td", {},
          h("button", { type: "button", class: "small warn", "data-action": "trip", disabled: staticTier(st, b.name),
            title: staticTier(st, b.name) ? "the static tier is the answer of last resort" : "force this breaker open",
            onclick: () => adminAction("/v1/admin/breakers/trip", { breaker: b.name }, "Trip " + b.name + "?") }, "trip"),
          " ",
          h("button", { type: "button", class: "small", "data-action": "reset",
            onclick: () => adminAction("/v1/admin/breakers/reset", { breaker: b.name }, "Reset " + b.name + "?") }, "reset"))),
    (el, b) => {
      const stEl = el.querySelector('[data-role="state"]');
      setClass(stEl, "state state-" + b.state);
      setText(stEl, b.state);
      el.querySelector('[data-role="until"]').dataset.until = b.open_until || "";
      let counts = b.calls + " / " + b.failures;
      if (b.consecutive_failures) counts += " (" + b.consecutive_failures + " in a row)";
      if (b.rejected) counts += ", " + b.rejected + " rejected";
      setText(el.querySelector('[data-role="counts"]'), counts);
      const cd = cooldownOf(st, b.name);
      el.querySelector('[data-role="cooldown"]').dataset.until = cd ? cd.until : "";
      setText(el.querySelector('[data-role="probe"]'), describe(probeOf(st, b)));
      setText(el.querySelector('[data-role="reason"]'), tripText(b));
    });
  }

  function hitRate(c) {
    if (typeof c.hit_rate === "number") return c.hit_rate;
    if (typeof c.hits === "number" && typeof c.misses === "number" && c.hits + c.misses > 0) {
      return c.hits / (c.hits + c.misses);
    }
    return null;
  }

  function renderBulkheads(st) {
    const rows = (st.bulkheads || []).map((b) =>
      h("tr", { "data-tier": b.tier },
        h("td", {}, b.tier),
        h("td", {}, b.in_flight + " / " + b.max_concurrent),
        h("td", {}, b.queued + " / " + b.max_queue),
        h("td", {}, b.rejected)));
    replaceRows($("bulkheads"), rows, "no bulkhead configured");
  }

  function renderCaches(st) {
    const rows = (st.caches || []).map((c) => {
      const r = hitRate(c);
      return h("tr", { "data-tier": c.tier },
        h("td", {}, c.tier),
        h("td", {}, c.entries),
        h("td", {}, r === null ? "—" : pct(r)));
    });
    replaceRows($("caches"), rows, "no cache tier");
  }

  function renderInstances(st) {
    const box = $("instances");
    const list = Array.isArray(st.instances) ? st.instances : st.instance ? [st.instance] : [];
    if (list.length === 0) {
      box.replaceChildren();
      return;
    }
    box.replaceChildren(h("h3", {}, "Instances"),
      h("ul", {}, list.map((i) => h("li", {}, typeof i === "object" ? (i.id || i.name || "") + " " + describe(i) : i))));
  }

  function replaceRows(table, rows, empty) {
    const cols = table.tHead.rows[0].cells.length;
    if (rows.length === 0) rows = [h("tr", {}, h("td", { colspan: cols, class: "muted" }, empty))];
    const tbody = table.tBodies[0];
    // Replace only when something changed, so the page does not flicker.
    const text = rows.map((r) => r.textContent).join("\u0000");
    if (tbody.dataset.text === text) return;
    tbody.dataset.text = text;
    tbody.replaceChildren(...rows);
  }

  // tick updates every countdown from its data-until time.
  function tick() {
    for (const el of document.querySelectorAll("[data-until]")) {
      const until = Date.parse(el.dataset.until || "");
      if (Number.isNaN(until)) {
        setText(el, el.tagName === "TD" ? "—" : "");
        continue;
      }
      const left = until - now();
      setText(el, left > 0 ? fmtMs(left) + " left" : "ending");
    }
  }

  function fmtMs(ms) {
    if (ms < 1000) return Math.round(ms) + " ms";
    const s = ms / 1000;
    if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + " s";
    return Math.floor(s / 60) + "m " + Math.round(s % 60) + "s";
  }

  function pct(x) {
    return (100 * x).toFixed(1) + "%";
  }

  // ---- questions and the chart ------------------------------------------

  function addQuestion(q, count) {
    state.questions.unshift(q);
    state.questions.length = Math.min(state.questions.length, MAX_QUESTIONS);
    if (count) {
      const t = Date.parse(q.time || "") || now();
      const bucket = Math.floor(t / BUCKET_MS);
      const counts = state.history.get(bucket) || {};
      const src = q.source || "error";
      counts[src] = (counts[src] || 0) + 1;
      state.history.set(bucket, counts);
    }
    renderQuestions();
    renderChart();
  }

  // setHistory takes the server's answers by source per bucket and its
  // latest questions, sent when the feed opens.
  function setHistory(msg) {
    state.history = new Map();
    const width = msg.bucket_ms || BUCKET_MS;
    for (const b of msg.buckets || []) {
      const t = Date.parse(b.start || "");
      if (Number.isNaN(t)) continue;
      const bucket = Math.floor((t + width / 2) / BUCKET_MS);
      state.history.set(bucket, { ...(b.counts || {}) });
    }
    state.questions = (msg.questions || []).slice(0, MAX_QUESTIONS);
    renderQuestions();
    renderChart();
  }

  function attemptsText(attempts) {
    return (attempts || []).map((a) =>
      a.tier + (a.model ? "/" + a.model : "") + ": " + a.outcome + (a.duration_ms ? " " + fmtMs(a.duration_ms) : "")).join(" → ");
  }

  function renderQuestions() {
    const rows = state.questions.map((q) => {
      const t = Date.parse(q.time || "");
      const src = q.source || "error";
      return h("tr", { "data-request": q.request_id || "" },
        h("td", {}, Number.isNaN(t) ? "" : new Date(t).toLocaleTimeString()),
        h("td", {}, q.tenant || ""),
        h("td", {}, h("span", { class: "badge badge-" + src }, src), q.question ? h("div", { class: "muted" }, q.question) : null),
        h("td", { class: "attempts" }, attemptsText(q.attempts) || q.error || ""),
        h("td", {}, q.duration_ms !== undefined ? fmtMs(q.duration_ms) : ""));
    });
    $("questions").tBodies[0].replaceChildren(...rows);
    $("questions-empty").hidden = rows.length > 0;
  }

  const SVG = "http://www.w3.org/2000/svg";
  function s(tag, attrs, ...kids) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    for (const kid of kids) el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    return el;
  }

  function renderChart() {
    const W = 600, H = 180, left = 34, bottom = 20, top = 8;
    const last = Math.floor(now() / BUCKET_MS);
    const first = last - HISTORY_BUCKETS + 1;
    let peak = 1;
    for (let b = first; b <= last; b++) {
      const c = state.history.get(b) || {};
      peak = Math.max(peak, Object.values(c).reduce((x, y) => x + y, 0));
    }
    const bw = (W - left) / HISTORY_BUCKETS;
    const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "answers by source per 10 seconds" });
    svg.append(s("line", { class: "axis", x1: left, y1: H - bottom, x2: W, y2: H - bottom }));
    svg.append(s("text", { x: left - 4, y: top + 10, "text-anchor": "end" }, peak));
    svg.append(s("text", { x: left - 4, y: H - bottom, "text-anchor": "end" }, 0));
    svg.append(s("text", { x: left, y: H - 4 }, "−" + (HISTORY_BUCKETS * BUCKET_MS / 60000) + " min"));
    svg.append(s("text", { x: W, y: H - 4, "text-anchor": "end" }, "now"));
    const used = new Set();
    for (let b = first; b <= last; b++) {
      const c = state.history.get(b) || {};
      let y = H - bottom;
      for (const src of SOURCES) {
        const n = c[src] || 0;
        if (!n) continue;
        used.add(src);
        const bh = (n / peak) * (H - bottom - top);
        y -= bh;
        const rect = s("rect", { x: left + (b - first) * bw + 1, y, width: Math.max(bw - 2, 1), height: bh,
          fill: `var(--${src})`, "data-source": src });
        rect.append(s("title", {}, `${src}: ${n}`));
        svg.append(rect);
      }
    }
    $("chart").replaceChildren(svg);
    const legend = SOURCES.filter((x) => used.has(x)).map((x) =>
      h("span", {}, h("span", { class: "sw badge-" + x }), x));
    $("chart-legend").replaceChildren(...legend);
  }

  // ---- admin actions -----------------------------------------------------

  // confirmAction asks the operator to confirm text; it resolves to true
  // on Confirm.
  function confirmAction(text) {
    const dlg = $("confirm");
    setText($("confirm-text"), text);
    dlg.returnValue = "";
    return new Promise((resolve) => {
      dlg.addEventListener("close", () => resolve(dlg.returnValue === "ok"), { once: true });
      dlg.showModal();
    });
  }

  function adminMsg(ok, text) {
    const el = $("admin-msg");
    setClass(el, "admin-msg " + (ok ? "ok" : "bad"));
    setText(el, text);
  }

  async function adminAction(path, body, question) {
    if (!(await confirmAction(question))) {
      adminMsg(true, "cancelled");
      return;
    }
    const r = await request("POST", path, body);
    const what = question.replace(/\?$/, "");
    if (r.ok) {
      let text = what + ": done";
      if (r.body && r.body.version !== undefined) text += " (knowledge base v" + r.body.version + ")";
      adminMsg(true, text);
    } else {
      let hint = "";
      if (r.status === 401) hint = " — type the admin key";
      else if (r.status === 403) hint = " — this key may not use admin actions";
      adminMsg(false, what + ": refused, " + errorText(r) + hint);
    }
    if (!state.settings.feed) refresh();
  }

  // ---- the demo ------------------------------------------------------------

  async function loadFaults() {
    const r = await request("GET", "/v1/demo/faults");
    if (!r.ok || !r.body) return;
    state.faults = r.body.faults || {};
    state.modes = r.body.modes || [];
    renderFaults();
  }

  function sameFault(a, b) {
    if (!b) return !a || !a.mode || a.mode === "ok";
    if (!a || a.mode !== b.mode) return false;
    return Object.entries(b).every(([k, v]) => k === "mode" || String(a[k]) === String(v) ||
      (k === "delay" || k === "retry_after") && a[k] && String(a[k]).startsWith(String(v).replace(/s$/, "")));
  }

  function renderFaults() {
    const models = Object.keys(state.faults).filter((m) => m !== "*").sort();
    const choices = FAULT_CHOICES.filter((c) => !c.fault || state.modes.length === 0 || state.modes.includes(c.fault.mode));
    $("faults").replaceChildren(...models.map((m) => {
      const cur = state.faults[m];
      const known = choices.find((c) => sameFault(cur, c.fault));
      return h("div", { class: "fault", "data-model": m },
        h("span", { class: "model" }, m),
        choices.map((c) => h("button", { type: "button", class: "small" + (c === known ? " on" : ""), "data-fault": c.label,
          "aria-pressed": c === known ? "true" : "false", onclick: () => setFault(m, c) }, c.label)),
        h("span", { class: "current" }, known ? "" : "now: " + describe(cur)));
    }));
  }

  async function setFault(model, choice) {
    const path = "/v1/demo/faults/" + encodeURIComponent(model);
    const r = choice.fault ? await request("PUT", path, choice.fault) : await request("DELETE", path);
    if (!r.ok) {
      adminMsg(false, "fault for " + model + ": " + errorText(r));
      return;
    }
    await loadFaults();
  }

  async function ask(question) {
    question = question.trim();
    if (!question) return;
    const card = h("div", { class: "answer", "data-role": "answer" }, h("div", { class: "q" }, question), h("div", { class: "muted" }, "asking…"));
    $("chat-log").prepend(card);
    const r = await request("POST", "/v1/ask", { question, session_id: state.session });
    card.replaceChildren(...answerView(question, r));
    if (!state.settings.feed) refresh();
  }

  function answerView(question, r) {
    const kids = [h("div", { class: "q" }, question)];
    if (!r.ok || !r.body) {
      kids.push(h("div", { class: "error" }, "no answer: " + errorText(r)));
      return kids;
    }
    const a = r.body;
    kids.push(h("div", {},
      h("span", { class: "badge badge-" + a.source, "data-role": "badge" }, a.source),
      a.model ? h("span", { class: "muted" }, " " + a.model) : null,
      a.degraded ? h("span", { class: "muted" }, " · degraded") : null));
    if (a.note) kids.push(h("div", { class: "note", "data-role": "note" }, a.note));
    kids.push(h("div", { class: "text" }, a.answer));
    const actions = a.actions || {};
    const buttons = [];
    if (actions.refresh) buttons.push(h("button", { type: "button", class: "small", "data-action": "refresh", onclick: () => ask(question) }, "Ask again"));
    if (actions.retry_later) {
      const b = h("button", { type: "button", class: "small", "data-action": "retry_later", disabled: true, onclick: () => ask(question) }, "Try again in 10 s");
      setTimeout(() => { b.disabled = false; setText(b, "Try again"); }, 10000);
      buttons.push(b);
    }
    if (actions.customer_service) {
      buttons.push(h("button", { type: "button", class: "small", "data-action": "customer_service",
        onclick: (e) => { e.target.replaceWith(h("span", { class: "muted" }, "A customer-service agent would take over here.")); } },
      "Contact customer service"));
    }
    if (buttons.length) kids.push(h("div", { class: "actions" }, buttons));
    if (a.attempts && a.attempts.length) kids.push(h("div", { class: "muted attempts" }, attemptsText(a.attempts)));
    return kids;
  }

  // ---- start ---------------------------------------------------------------

  async function start() {
    const r = await request("GET", "/console/settings.json");
    if (r.ok && r.body) Object.assign(state.settings, r.body);
    $("admin-key").addEventListener("change", () => { if (!state.settings.feed) refresh(); });
    $("key-form").addEventListener("submit", (e) => e.preventDefault());
    $("reload").addEventListener("click", () => adminAction("/v1/admin/reload", undefined, "Reload the knowledge base?"));
    $("reset-all").addEventListener("click", () => adminAction("/v1/admin/breakers/reset", { breaker: "*" }, "Reset every breaker?"));
    if (state.settings.demo) {
      $("demo").hidden = false;
      $("chat-form").addEventListener("submit", (e) => {
        e.preventDefault();
        const input = $("chat-input");
        ask(input.value || input.placeholder);
        input.value = "";
      });
      loadFaults();
      setInterval(loadFaults, 5000);
    }
    renderChart();
    setInterval(tick, 250);
    setInterval(renderChart, BUCKET_MS / 2);
    if (state.settings.feed) follow(state.settings.feed);
    else poll();
  }

  start();
})();
