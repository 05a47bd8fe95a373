"use strict";
// The Mayfly Data Explorer: every request goes to the server's own API,
// signed here with the account key as the SDKs sign them.

const $ = (id) => document.getElementById(id);
let accountKey = sessionStorage.getItem("mayfly-key") || "";
let hmacKey = null;
// db and coll are names, for people; dbRid and collRid address them, as
// names cannot all be (a name holding "%41" or "/" reaches another
// resource, or none, through a path). gen counts the containers opened.
const state = { db: null, coll: null, dbRid: null, collRid: null, gen: 0, props: null, timer: null, feedTimer: null, backlogTimer: null };

// ---- signing and requests ----

async function importKey(b64) {
  const raw = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

// resourceOf is what a request for the path segs is signed over: by
// names, the link of names; by rids, the lower-cased rid of the resource
// (of the parent, for a feed), as the DocumentDB-era SDKs sign.
function resourceOf(segs, byRid) {
  const n = segs.length;
  if (n === 0) return { type: "", link: "" };
  if (n % 2 === 0) return { type: segs[n - 2], link: byRid ? segs[n - 1].toLowerCase() : segs.join("/") };
  const parent = segs.slice(0, n - 1);
  return { type: segs[n - 1], link: byRid ? (parent.at(-1) || "").toLowerCase() : parent.join("/") };
}

// exact keeps the digits of integers a double cannot hold (past 2^53) as
// they were sent, so that an item read, edited and saved keeps them.
function exact(key, value, context) {
  if (typeof value === "number" && !Number.isSafeInteger(value) && context && /^-?\d+$/.test(context.source) && JSON.rawJSON) {
    return JSON.rawJSON(context.source);
  }
  return value;
}

// api sends a signed request for the resource path segs (names, not
// escaped; rids with opts.byRid) and returns {status, headers, body}.
async function api(method, segs, opts = {}) {
  const { type, link } = resourceOf(segs, opts.byRid);
  const date = new Date().toUTCString();
  const payload = `${method.toLowerCase()}\n${type.toLowerCase()}\n${link}\n${date.toLowerCase()}\n\n`;
  const sig = await crypto.subtle.sign("HMAC", hmacKey, new TextEncoder().encode(payload));
  const b64 = btoa(String.fromCharCode(...new Uint8Array(sig)));
  const headers = {
    "x-ms-date": date,
    "x-ms-version": "2020-07-15",
    authorization: encodeURIComponent(`type=master&ver=1.0&sig=${b64}`),
    ...(opts.headers || {}),
  };
  let body;
  if (opts.body !== undefined) {
    body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
    if (!headers["content-type"]) headers["content-type"] = "application/json";
  }
  const url = "/" + segs.map(encodeURIComponent).join("/");
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text, exact) : null;
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, body: json };
}

// collApi is api for the open container's path and rest after it.
function collApi(method, rest, opts = {}) {
  return api(method, ["dbs", state.dbRid, "colls", state.collRid, ...rest], { ...opts, byRid: true });
}

// ridsOf reads the database's and the container's rids from a container's
// _self (dbs/{dbRid}/colls/{collRid}/).
function ridsOf(c) {
  const segs = c._self.split("/");
  return { dbRid: segs[1], collRid: segs[3] };
}

// must throws the service's message for a status other than ok.
function must(res, ...ok) {
  if (!ok.includes(res.status)) {
    let msg = res.body && res.body.message ? res.body.message.split("\n")[0] : `status ${res.status}`;
    // A query's error comes as the service sends it, a JSON list of
    // errors after "Message: ": the first one's text is the message.
    const listed = /^Message: (\{.*\})/.exec(msg);
    if (listed) {
      try {
        msg = JSON.parse(listed[1]).errors[0].message || msg;
      } catch {
        // not such a list: the message as it is
      }
    }
    const err = new Error(msg);
    err.status = res.status;
    throw err;
  }
  return res;
}

function say(text, kind = "info") {
  const s = $("status");
  s.textContent = text;
  s.className = text ? kind : "";
}

async function guard(fn) {
  try {
    say("");
    await fn();
  } catch (e) {
    if (e.status === 401) askForKey(); // a mistyped key, or a server restarted with another
    say(e.status === 412 ? `Conflict: the item changed since it was read (${e.message})` : e.message, "error");
  }
}

// ---- the tree ----

async function loadTree() {
  const tree = $("tree");
  tree.textContent = "";
  const dbs = must(await api("GET", ["dbs"]), 200).body.Databases || [];
  for (const db of dbs) {
    // By rid, and each database on its own: one the page cannot list
    // does not hide the others.
    const li = document.createElement("li");
    li.innerHTML = `<span class="db"></span> <button class="del" title="Delete database">delete</button>`;
    li.querySelector(".db").textContent = db.id;
    li.querySelector(".del").onclick = () =>
      guard(async () => {
        if (!confirm(`Delete database ${db.id} and everything in it?`)) return;
        must(await api("DELETE", ["dbs", db._rid], { byRid: true }), 204);
        if (state.db === db.id) clearPane();
        await loadTree();
      });
    let colls = [];
    try {
      colls = must(await api("GET", ["dbs", db._rid, "colls"], { byRid: true }), 200).body.DocumentCollections || [];
    } catch (e) {
      const err = document.createElement("span");
      err.className = "error";
      err.textContent = ` ${e.message}`;
      li.append(err);
    }
    const ul = document.createElement("ul");
    ul.style.listStyle = "none";
    ul.style.padding = "0";
    for (const c of colls) {
      const cli = document.createElement("li");
      const a = document.createElement("span");
      a.className = "coll" + (state.db === db.id && state.coll === c.id ? " selected" : "");
      a.textContent = c.id;
      a.dataset.db = db.id;
      a.dataset.coll = c.id;
      a.onclick = () => guard(() => openContainer(db.id, c));
      const del = document.createElement("button");
      del.className = "del";
      del.textContent = "delete";
      del.title = "Delete container";
      del.onclick = () =>
        guard(async () => {
          if (!confirm(`Delete container ${c.id}?`)) return;
          must(await api("DELETE", ["dbs", db._rid, "colls", c._rid], { byRid: true }), 204);
          if (state.coll === c.id && state.db === db.id) clearPane();
          await loadTree();
        });
      cli.append(a, del);
      ul.append(cli);
    }
    li.append(ul);
    tree.append(li);
  }
}

function clearPane() {
  stopTimers();
  state.db = state.coll = state.props = null;
  $("pane").innerHTML = `<p class="hint">Choose a container on the left.</p>`;
}

function stopTimers() {
  clearInterval(state.timer);
  clearTimeout(state.feedTimer);
  state.timer = state.feedTimer = null;
}

// duration writes a number of seconds the way people say it: 90 s, 10 min, 1 h.
function duration(secs) {
  if (secs % 3600 === 0) return `${secs / 3600} h`;
  if (secs % 60 === 0) return `${secs / 60} min`;
  return `${secs} s`;
}

// showBacklog shows how many expired items still wait for the purger
// (invisible already), every few seconds while the container is open.
async function showBacklog(db, coll) {
  clearTimeout(state.backlogTimer);
  if (state.db !== db || state.coll !== coll) return;
  const el = $("coll-backlog");
  const ttl = state.props.defaultTtl;
  if (!el || ttl === undefined || ttl === null) return;
  const res = await api("GET", ["dbs", db, "colls", coll, "_mayfly", "ttl"]).catch(() => ({ status: 0 }));
  if (res.status === 200 && state.db === db && state.coll === coll) {
    const n = res.body.expiredAwaitingPurge;
    const m = res.body.awaitingErasure;
    el.textContent = ` · purge backlog ${n}${res.body.capped ? "+" : ""} item${n === 1 ? "" : "s"}` +
      ` · awaiting erasure ${m}${res.body.erasureCapped ? "+" : ""} item${m === 1 ? "" : "s"}` +
      ` (deadline ${duration(res.body.eraseDeadlineSeconds)})`;
  }
  state.backlogTimer = setTimeout(() => showBacklog(db, coll), 3000);
}

// ---- dialogs ----

function ask(title, fields) {
  return new Promise((resolve) => {
    const d = $("dialog");
    $("dialog-title").textContent = title;
    $("dialog-error").textContent = "";
    const box = $("dialog-fields");
    box.textContent = "";
    for (const f of fields) {
      const label = document.createElement("label");
      label.textContent = f.label + " ";
      const input = document.createElement(f.options ? "select" : "input");
      input.name = f.name;
      if (f.options) {
        for (const o of f.options) input.append(new Option(o, o));
      }
      input.value = f.value || "";
      if (f.placeholder) input.placeholder = f.placeholder;
      label.append(input);
      box.append(label);
    }
    d.onclose = () => {
      if (d.returnValue !== "ok") return resolve(null);
      const out = {};
      for (const f of fields) out[f.name] = box.querySelector(`[name="${f.name}"]`).value.trim();
      resolve(out);
    };
    // Cancel is no submit button, so that Enter in a field submits the
    // form with OK, the first one left.
    $("dialog-cancel").onclick = () => d.close("cancel");
    d.returnValue = "";
    d.showModal();
  });
}

async function newDatabase() {
  const v = await ask("New database", [
    { name: "id", label: "Database id" },
    { name: "throughput", label: "Shared throughput (RU/s, optional)", placeholder: "none" },
  ]);
  if (!v) return;
  const headers = v.throughput ? { "x-ms-offer-throughput": v.throughput } : {};
  must(await api("POST", ["dbs"], { body: { id: v.id }, headers }), 201);
  await loadTree();
  say(`Database ${v.id} created.`);
}

async function newContainer() {
  const all = must(await api("GET", ["dbs"]), 200).body.Databases || [];
  const dbs = all.map((d) => d.id);
  if (dbs.length === 0) throw new Error("Create a database first.");
  const v = await ask("New container", [
    { name: "db", label: "Database", options: dbs, value: state.db || dbs[0] },
    { name: "id", label: "Container id" },
    { name: "pk", label: "Partition key path", value: "/pk" },
    { name: "ttl", label: "Default time to live (seconds; -1: on, no default; empty: off)", placeholder: "off" },
    { name: "throughput", label: "Throughput (RU/s, optional)", placeholder: "400" },
  ]);
  if (!v) return;
  const body = { id: v.id, partitionKey: { paths: [v.pk || "/pk"], kind: "Hash", version: 2 } };
  if (v.ttl !== "") {
    // Sent as typed when it is no number, for the service's message.
    body.defaultTtl = /^\s*-?\d+\s*$/.test(v.ttl) ? Number(v.ttl) : v.ttl;
  }
  const headers = v.throughput ? { "x-ms-offer-throughput": v.throughput } : {};
  // By rid, as the tree addresses databases.
  const dbRid = all.find((d) => d.id === v.db)._rid;
  const created = must(await api("POST", ["dbs", dbRid, "colls"], { body, headers, byRid: true }), 201).body;
  await loadTree();
  await openContainer(v.db, created);
  say(`Container ${v.id} created.`);
}

// ---- a container ----

// The partition key's paths: one, or up to three for a hierarchical key.
function pkPaths() {
  return state.props.partitionKey.paths;
}

// pathSegments splits a path such as /a/"b/c" into its property names;
// a quoted name may hold "/".
function pathSegments(path) {
  return [...path.matchAll(/\/("((?:[^"\\]|\\.)*)"|[^/]*)/g)].map((m) => (m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[1]));
}

// pkValueOf is the item's partition key: a value per path.
function pkValueOf(item) {
  return pkPaths().map((path) => {
    let v = item;
    for (const seg of pathSegments(path)) v = v == null ? undefined : v[seg];
    // An object or an array is no key value: the key is undefined there.
    return v !== null && typeof v === "object" && !(JSON.rawJSON && JSON.isRawJSON(v)) ? undefined : v;
  });
}

// pkText shows a key as the user types it into a filter: the value of a
// single path, the array of a hierarchical key.
// An undefined value is written {}, as in the partition key header, which
// the filter takes back.
function pkText(key) {
  const shown = key.map((v) => (v === undefined ? {} : v));
  return JSON.stringify(pkPaths().length === 1 ? shown[0] : shown);
}

// pkOfText reads a filter: a value for a single path; for a hierarchical
// key an array of the first values (a prefix, which a query accepts), or
// one value for the first path.
function pkOfText(text) {
  const v = parseValue(text);
  return pkPaths().length > 1 && Array.isArray(v) ? v : [v];
}

function pkHeader(key) {
  return { "x-ms-documentdb-partitionkey": JSON.stringify(key.map((v) => (v === undefined ? {} : v))) };
}

// expiryOf is the instant an item expires (ms), or null.
function expiryOf(item) {
  const def = state.props.defaultTtl;
  if (def === undefined || def === null) return null;
  // A ttl of null is no ttl: the item takes the container's (ttl.md).
  const ttl = item.ttl !== undefined && item.ttl !== null ? item.ttl : def;
  if (ttl === -1 || ttl === undefined || ttl === null) return null;
  return (item._ts + ttl) * 1000;
}

function countdown(ms) {
  const left = Math.ceil((ms - Date.now()) / 1000);
  if (left <= 0) return "expired";
  const h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
  return (h ? `${h}h ` : "") + (h || m ? `${m}m ` : "") + `${s}s`;
}

// openContainer shows container c of database db (a name). A container
// opened while this one was read wins: this one's answer is dropped.
async function openContainer(db, c) {
  stopTimers();
  const coll = c.id;
  const gen = ++state.gen;
  const { dbRid, collRid } = ridsOf(c);
  const props = must(await api("GET", ["dbs", dbRid, "colls", collRid], { byRid: true }), 200).body;
  if (gen !== state.gen) return;
  Object.assign(state, { db, coll, dbRid, collRid, props });
  document.querySelectorAll("#tree .coll").forEach((el) =>
    el.classList.toggle("selected", el.dataset.db === db && el.dataset.coll === coll),
  );
  const ttl = state.props.defaultTtl;
  const ttlText = ttl === undefined || ttl === null ? "off" : ttl === -1 ? "on, no default" : `${ttl} s`;
  const pane = $("pane");
  pane.innerHTML = `
    <h2 id="coll-title"></h2>
    <p class="meta">Partition key <code id="coll-pk"></code> · default time to live <b id="coll-ttl"></b><span id="coll-backlog"></span></p>
    <div class="subtabs">
      <button id="sub-items" class="active">Items</button>
      <button id="sub-query">Query</button>
      <button id="sub-feed">Change feed</button>
    </div>
    <div id="sub"></div>`;
  $("coll-title").textContent = `${db} / ${coll}`;
  $("coll-pk").textContent = pkPaths().join(", ");
  $("coll-ttl").textContent = ttlText;
  const subs = { "sub-items": showItems, "sub-query": showQuery, "sub-feed": showFeed };
  for (const [id, fn] of Object.entries(subs)) {
    $(id).onclick = () =>
      guard(async () => {
        stopTimers();
        for (const other of Object.keys(subs)) $(other).classList.toggle("active", other === id);
        await fn();
      });
  }
  showBacklog(db, coll);
  await showItems();
}

async function showItems() {
  clearInterval(state.timer);
  const sub = $("sub");
  sub.innerHTML = `
    <div class="bar">
      <label>Partition key value <input id="pk-filter" placeholder="all partitions" size="20"></label>
      <button id="apply-filter">Apply</button>
      <button id="new-item" class="primary">New item</button>
    </div>
    <div class="editor">
      <div>
        <table><thead><tr><th>id</th><th>partition key</th><th>_ts</th><th>expires in</th></tr></thead><tbody id="items"></tbody></table>
        <button id="more-items" hidden>Load more</button>
      </div>
      <div id="item-editor"></div>
    </div>`;
  let continuation = "";
  let f = "";
  const load = async (reset) => {
    if (reset) {
      $("items").textContent = "";
      continuation = "";
      // "Load more" goes on with the filter the list was made with.
      f = $("pk-filter").value.trim();
    }
    const headers = { "x-ms-max-item-count": "50" };
    if (continuation) headers["x-ms-continuation"] = continuation;
    if (f !== "") Object.assign(headers, pkHeader(pkOfText(f)));
    const res = must(await collApi("GET", ["docs"], { headers }), 200);
    for (const item of res.body.Documents || []) addRow(item);
    continuation = res.headers.get("x-ms-continuation") || "";
    $("more-items").hidden = !continuation;
  };
  $("apply-filter").onclick = () => guard(() => load(true));
  $("more-items").onclick = () => guard(() => load(false));
  $("new-item").onclick = () => editItem(null);
  await load(true);
  state.timer = setInterval(tick, 1000);
}

function parseValue(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function addRow(item) {
  const tr = document.createElement("tr");
  tr.className = "item";
  tr.dataset.id = item.id;
  const exp = expiryOf(item);
  if (exp !== null) tr.dataset.expires = String(exp);
  for (const v of [item.id, pkText(pkValueOf(item)), String(item._ts), exp === null ? "never" : countdown(exp)]) {
    const td = document.createElement("td");
    td.textContent = v;
    tr.append(td);
  }
  tr.lastChild.className = "countdown";
  tr.onclick = () => guard(() => editItem(item));
  $("items").append(tr);
}

// tick moves every countdown on; an item whose instant has passed is shown
// expired (a refresh no longer lists it: the server does not return it).
function tick() {
  document.querySelectorAll("#items tr[data-expires]").forEach((tr) => {
    const text = countdown(Number(tr.dataset.expires));
    tr.lastChild.textContent = text;
    tr.classList.toggle("expired", text === "expired");
  });
}

function editItem(item) {
  const box = $("item-editor");
  const template = {};
  template.id = "";
  for (const path of pkPaths()) {
    const seg = pathSegments(path)[0];
    if (seg) template[seg] = "";
  }
  box.innerHTML = `
    <h3 id="editor-title"></h3>
    <textarea id="item-json" rows="22" spellcheck="false"></textarea>
    <p class="error" id="json-error"></p>
    <button id="save-item" class="primary">Save</button>
    <button id="delete-item">Delete</button>`;
  $("editor-title").textContent = item ? `Item ${item.id}` : "New item";
  $("item-json").value = JSON.stringify(item || template, null, 2);
  $("delete-item").hidden = !item;
  $("item-json").oninput = () => {
    try {
      JSON.parse($("item-json").value);
      $("json-error").textContent = "";
    } catch (e) {
      $("json-error").textContent = e.message;
    }
  };
  $("save-item").onclick = () =>
    guard(async () => {
      let doc;
      try {
        doc = JSON.parse($("item-json").value, exact);
      } catch (e) {
        throw new Error(`The JSON is invalid: ${e.message}`);
      }
      const headers = pkHeader(pkValueOf(doc));
      let res;
      if (item) {
        headers["if-match"] = item._etag;
        res = must(await collApi("PUT", ["docs", item._rid], { body: JSON.stringify(doc), headers }), 200);
      } else {
        res = must(await collApi("POST", ["docs"], { body: JSON.stringify(doc), headers }), 201);
      }
      await showItems();
      editItem(res.body);
      say(`Saved ${res.body.id} (${res.headers.get("x-ms-request-charge")} RU).`);
    });
  $("delete-item").onclick = () =>
    guard(async () => {
      if (!confirm(`Delete item ${item.id}?`)) return;
      must(await collApi("DELETE", ["docs", item._rid], { headers: { ...pkHeader(pkValueOf(item)), "if-match": item._etag } }), 204);
      await showItems();
      say(`Deleted ${item.id}.`);
    });
}

async function showQuery() {
  const sub = $("sub");
  sub.innerHTML = `
    <textarea id="query-text" rows="5" spellcheck="false">SELECT * FROM c</textarea>
    <div class="bar">
      <label>Partition key value <input id="query-pk" placeholder="all partitions" size="20"></label>
      <button id="run-query" class="primary">Run</button>
      <button id="more-results" hidden>Load more</button>
    </div>
    <p class="meta" id="query-stats"></p>
    <pre id="query-results"></pre>`;
  let continuation = "";
  let rows = [];
  let charge = 0;
  let pages = 0;
  let text = "";
  let pk = "";
  const run = async (reset) => {
    if (reset) {
      // "Load more" goes on with the query and key the results came from.
      text = $("query-text").value;
      pk = $("query-pk").value.trim();
      continuation = "";
      rows = [];
      charge = 0;
      pages = 0;
    }
    const headers = {
      "content-type": "application/query+json",
      "x-ms-documentdb-isquery": "True",
      "x-ms-max-item-count": "100",
      "x-ms-documentdb-populatequerymetrics": "True",
      "x-ms-cosmos-populateindexmetrics": "True",
    };
    if (continuation) headers["x-ms-continuation"] = continuation;
    if (pk !== "") {
      Object.assign(headers, pkHeader(pkOfText(pk)));
    } else {
      // Over every partition, served whole: the page has no SDK to run
      // the query range by range and merge the ranges' rows (ORDER BY,
      // aggregates, TOP, DISTINCT), so it asks Mayfly to run it as over
      // a single range.
      headers["x-ms-documentdb-query-enablecrosspartition"] = "True";
      headers["x-ms-mayfly-query-whole"] = "True";
    }
    const res = must(
      await collApi("POST", ["docs"], {
        body: { query: text, parameters: [] },
        headers,
      }),
      200,
    );
    rows = rows.concat(res.body.Documents || []);
    continuation = res.headers.get("x-ms-continuation") || "";
    charge += Number(res.headers.get("x-ms-request-charge") || 0);
    pages++;
    const metrics = res.headers.get("x-ms-documentdb-query-metrics") || "";
    $("query-stats").textContent = `${rows.length} results in ${pages} page(s) · ${charge.toFixed(2)} RU` + (metrics ? ` · ${metrics}` : "");
    $("query-results").textContent = JSON.stringify(rows, null, 2);
    $("more-results").hidden = !continuation;
  };
  $("run-query").onclick = () => guard(() => run(true));
  $("more-results").onclick = () => guard(() => run(false));
}

async function showFeed() {
  const sub = $("sub");
  sub.innerHTML = `
    <p class="meta">Changes from now on, as they come (polled every 2 seconds).</p>
    <table><thead><tr><th>id</th><th>_lsn</th><th>_ts</th></tr></thead><tbody id="feed"></tbody></table>`;
  let etag = "*";
  const poll = async () => {
    try {
      const headers = { "a-im": "Incremental feed", "if-none-match": etag, "x-ms-max-item-count": "100" };
      const res = await collApi("GET", ["docs"], { headers });
      if (res.status === 200) {
        for (const d of res.body.Documents || []) {
          const tr = document.createElement("tr");
          for (const v of [d.id, String(d._lsn), String(d._ts)]) {
            const td = document.createElement("td");
            td.textContent = v;
            tr.append(td);
          }
          $("feed").prepend(tr);
        }
      }
      if (res.headers.get("etag")) etag = res.headers.get("etag");
      // A container deleted meanwhile, or a key the server no longer
      // takes, is said, as any other request's failure is.
      must(res, 200, 304);
    } catch (e) {
      if (e.status === 401) askForKey();
      say(e.message, "error");
    }
    state.feedTimer = setTimeout(poll, 2000);
  };
  await poll();
}

// ---- start ----

// useKey signs with key and keeps it for the tab once the server has
// taken it; until then the key bar stays.
async function useKey(key) {
  hmacKey = await importKey(key);
  accountKey = key;
  await loadTree();
  sessionStorage.setItem("mayfly-key", key);
  $("keybar").hidden = true;
  $("conn").textContent = `AccountEndpoint=${location.origin}/;AccountKey=${key};`;
}

// askForKey forgets the key the server refused and shows the key bar.
function askForKey() {
  sessionStorage.removeItem("mayfly-key");
  $("keybar").hidden = false;
}

async function start() {
  $("new-db").onclick = () => guard(newDatabase);
  $("new-coll").onclick = () => guard(newContainer);
  $("refresh").onclick = () => guard(loadTree);
  $("tab-data").onclick = () => {
    $("data-view").hidden = false;
    $("connect-view").hidden = true;
    $("tab-data").classList.add("active");
    $("tab-connect").classList.remove("active");
  };
  $("tab-connect").onclick = () => {
    $("data-view").hidden = true;
    $("connect-view").hidden = false;
    $("tab-connect").classList.add("active");
    $("tab-data").classList.remove("active");
  };
  $("copy-conn").onclick = () => navigator.clipboard.writeText($("conn").textContent).then(() => say("Copied."));
  $("key-save").onclick = () => guard(() => useKey($("key").value.trim()));
  if (!accountKey) {
    const cfg = await (await fetch("config.json")).json();
    accountKey = cfg.emulatorKey || "";
  }
  if (accountKey) {
    await guard(() => useKey(accountKey));
  } else {
    $("keybar").hidden = false;
  }
}

start();
