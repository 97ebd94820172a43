// SQE's web UI: a cluster page with the live query list, and a page per query. It polls the
// coordinator's /ui/api every second; no build step, no dependencies.
"use strict";

const app = document.getElementById("app");
const POLL_MS = 1000;
let timer = null;

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function num(value) {
  return value == null ? "" : Number(value).toLocaleString("en-US");
}

function duration(ms) {
  if (ms == null) return "";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

function bytes(value) {
  if (value == null) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = value, u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${u ? v.toFixed(1) : v} ${units[u]}`;
}

function progressBar(percentage) {
  if (percentage == null) return '<span class="muted">–</span>';
  const p = Math.max(0, Math.min(100, percentage));
  return `<div class="progress" data-progress="${p.toFixed(1)}"><div class="bar" style="width:${p}%"></div>` +
    `<div class="text">${Math.floor(p)}%</div></div>`;
}

function state(name) {
  return `<span class="state state-${esc(name)}">${esc(name)}</span>`;
}

// Replaces an element's content only when it changed: what the user points at stays put
// between polls that bring nothing new.
function setHtml(element, html) {
  if (element && element.dataset.html !== html) {
    element.innerHTML = html;
    element.dataset.html = html;
  }
}

class LoginNeeded extends Error {}

async function api(path, options = {}) {
  const response = await fetch(`/ui/api/${path}`, { credentials: "same-origin", ...options });
  if (response.status === 401) throw new LoginNeeded();
  if (response.status === 204) return null;
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function showLogin(message) {
  stop();
  const who = document.getElementById("whoami");
  who.textContent = "";
  delete who.dataset.html;
  delete app.dataset.html;
  app.innerHTML = `<form class="login" id="login">
      <strong>Log in to SQE</strong>
      <label>User <input name="user" id="user" autocomplete="username"></label>
      <label>Password <input name="password" id="password" type="password" autocomplete="current-password"></label>
      <span class="muted">Without client authentication any user name will do.</span>
      <label>Or a token <input name="token" id="token" type="password" autocomplete="off"></label>
      <span class="muted">A bearer token from your identity provider, where SQE takes JWTs.</span>
      <button type="submit" id="login-button">Log in</button>
      <span class="error" id="login-error">${esc(message || "")}</span>
    </form>`;
  document.getElementById("login").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    try {
      await api("login", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          user: form.get("user"),
          password: form.get("password"),
          token: form.get("token"),
        }),
      });
      route();
    } catch (e) {
      document.getElementById("login-error").textContent = e.message;
    }
  });
}

function stop() {
  if (timer) clearTimeout(timer);
  timer = null;
}

function poll(render) {
  stop();
  const tick = async () => {
    try {
      await render();
      timer = setTimeout(tick, POLL_MS);
    } catch (e) {
      if (e instanceof LoginNeeded) showLogin();
      else {
        delete app.dataset.html;
        app.insertAdjacentHTML("afterbegin", `<p class="error">${esc(e.message)}</p>`);
        timer = setTimeout(tick, POLL_MS * 3);
      }
    }
  };
  tick();
}

function whoami(cluster) {
  const who = document.getElementById("whoami");
  setHtml(who, `${esc(cluster.user)}${cluster.admin ? " (admin)" : ""}<button id="logout">Log out</button>`);
  const logout = document.getElementById("logout");
  if (!logout.onclick) {
    logout.onclick = async () => {
      await api("logout", { method: "POST" });
      showLogin();
    };
  }
}

async function renderCluster() {
  const [cluster, queries] = await Promise.all([api("cluster"), api("queries")]);
  whoami(cluster);
  const count = (s) => cluster.queries[s] || 0;
  const active = cluster.workers.filter((w) => w.state === "active").length;
  const workers = cluster.workers.map((w) => `<tr>
      <td>${esc(w.nodeId)}</td><td>${esc(w.uri)}</td><td>${state(w.state)}</td>
      <td>${esc(w.version)}</td><td class="num">${num(w.runningTasks)}</td>
      <td class="num">${w.lastSeenMsAgo == null ? "" : duration(w.lastSeenMsAgo) + " ago"}</td></tr>`).join("");
  const rows = queries.map((q) => `<tr class="query" data-query-id="${esc(q.queryId)}" data-state="${esc(q.state)}">
      <td><a href="#/query/${encodeURIComponent(q.queryId)}">${esc(q.queryId)}</a></td>
      <td>${state(q.state)}</td><td>${esc(q.user)}</td><td>${esc(q.endpoint)}</td>
      <td class="num">${duration(q.elapsedMs)}</td><td>${progressBar(q.progressPercentage)}</td>
      <td class="num">${num(q.outputRows)}</td><td class="sql" title="${esc(q.query)}">${esc(q.query)}</td></tr>`).join("");
  setHtml(app, `
    <div class="cards">
      <div class="card"><div class="value" id="active-workers">${active}</div><div class="label">active workers</div></div>
      <div class="card"><div class="value" id="running-queries">${count("RUNNING") + count("PLANNING")}</div><div class="label">running queries</div></div>
      <div class="card"><div class="value">${count("QUEUED")}</div><div class="label">queued</div></div>
      <div class="card"><div class="value">${count("FINISHED")}</div><div class="label">finished</div></div>
      <div class="card"><div class="value">${count("FAILED") + count("CANCELED")}</div><div class="label">failed or cancelled</div></div>
      <div class="card"><div class="value">${num(Math.round(cluster.rowsPerSecond))}</div><div class="label">rows/s (last minute)</div></div>
    </div>
    <h2>Workers</h2>
    <table id="workers"><tr><th>node</th><th>URI</th><th>state</th><th>version</th><th>running tasks</th><th>last seen</th></tr>${workers}</table>
    <h2>Queries</h2>
    <table id="queries"><tr><th>query</th><th>state</th><th>user</th><th>endpoint</th><th>elapsed</th><th>progress</th><th>rows</th><th>SQL</th></tr>${rows}</table>
    <p class="muted">Coordinator ${esc(cluster.coordinator.nodeId)} · ${esc(cluster.coordinator.version)}</p>`);
}

async function renderQuery(id) {
  const q = await api(`queries/${encodeURIComponent(id)}`);
  const stages = q.stages.map((s) => `
    <h2>Stage ${esc(s.stageId)} <span class="muted">${s.feeds == null ? "→ coordinator" : "→ stage " + esc(s.feeds)} · ${num(s.completedSplits)} of ${num(s.totalSplits)} splits</span></h2>
    <table class="stage"><tr><th>task</th><th>worker</th><th>state</th><th>splits</th><th>input rows</th><th>output rows</th><th>bytes scanned</th><th>CPU</th></tr>
    ${s.tasks.map((t) => `<tr><td>${t.task}</td><td>${esc(t.nodeId)} <span class="muted">${esc(t.workerUri)}</span></td>
      <td>${state(t.state)}</td><td class="num">${t.totalSplits == null ? "" : `${num(t.completedSplits)} / ${num(t.totalSplits)}`}</td>
      <td class="num">${num(t.inputRows)}</td><td class="num">${num(t.outputRows)}</td>
      <td class="num">${bytes(t.bytesScanned)}</td><td class="num">${duration(t.cpuMs)}</td></tr>`).join("")}
    </table>`).join("");
  const trace = q.traceId == null ? "" : q.traceUrl
    ? `<a id="trace" href="${esc(q.traceUrl)}" target="_blank" rel="noopener">${esc(q.traceId)}</a>`
    : `<span id="trace">${esc(q.traceId)}</span>`;
  if (!document.getElementById("query-head")) {
    app.innerHTML = '<p><a href="#/">← Cluster</a></p><div id="query-head"></div><div id="query-body"></div>';
  }
  // The heading and its kill button change only with the query's state.
  setHtml(document.getElementById("query-head"), `
    <h2>Query <span id="query-id">${esc(q.queryId)}</span> ${state(q.state)}
      ${q.mayKill ? '<button class="danger" id="kill">Kill</button>' : ""}</h2>`);
  setHtml(document.getElementById("query-body"), `
    ${progressBar(q.progressPercentage)}
    ${q.errorCode ? `<p class="error" id="query-error">${esc(q.errorCode)}: ${esc(q.errorMessage)}</p>` : ""}
    <dl>
      <dt>user</dt><dd>${esc(q.user)}${q.source ? ` (${esc(q.source)})` : ""}</dd>
      <dt>endpoint</dt><dd>${esc(q.endpoint)}</dd>
      <dt>catalog.schema</dt><dd>${esc(q.catalog)}.${esc(q.schema)}</dd>
      <dt>elapsed</dt><dd>${duration(q.elapsedMs)} (queued ${duration(q.queuedMs)}, planning ${duration(q.planningMs)}, running ${duration(q.executionMs)})</dd>
      <dt>rows</dt><dd>${num(q.outputRows)}</dd>
      <dt>bytes scanned</dt><dd>${bytes(q.bytesScanned)}</dd>
      <dt>peak memory</dt><dd>${bytes(q.peakMemoryBytes)}</dd>
      <dt>trace</dt><dd>${trace}</dd>
    </dl>
    <h2>SQL</h2><pre id="sql">${esc(q.query)}</pre>
    ${stages || '<p class="muted">No distributed stages: the coordinator ran it alone.</p>'}`);
  const kill = document.getElementById("kill");
  if (kill && !kill.onclick) {
    kill.onclick = async () => {
      kill.disabled = true;
      try { await api(`queries/${encodeURIComponent(id)}/kill`, { method: "POST" }); }
      catch (e) { alert(e.message); }
    };
  }
}

function route() {
  app.innerHTML = "";
  delete app.dataset.html;
  const hash = location.hash || "#/";
  const match = hash.match(/^#\/query\/(.+)$/);
  if (match) poll(() => renderQuery(decodeURIComponent(match[1])));
  else poll(renderCluster);
}

window.addEventListener("hashchange", route);
route();
