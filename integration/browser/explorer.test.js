// The Data Explorer in headless Chromium against a running Mayfly: create
// a database and a container with a time to live, create items, run a
// query, edit an item (and meet a conflict), watch an item expire, write
// the items of a hierarchical key, query across ranges, and recover from a
// wrong key.
//
// Environment:
//   MAYFLY_ENDPOINT  default https://localhost:8081/ (a server with the
//                    well-known emulator key, which the page is told)
//   CHROMIUM         the browser, default /usr/bin/chromium
//   SCREENSHOTS      a directory to keep screenshots of the main views in

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { randomUUID } from "node:crypto";
import puppeteer from "puppeteer-core";

const endpoint = process.env.MAYFLY_ENDPOINT || "https://localhost:8081/";
const shots = process.env.SCREENSHOTS;

describe("Data Explorer", () => {
  let browser;
  let page;
  const db = `explorer-${randomUUID().slice(0, 8)}`;

  before(async () => {
    browser = await puppeteer.launch({
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      headless: true,
      acceptInsecureCerts: true,
      args: ["--no-sandbox", "--ignore-certificate-errors"],
    });
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    page.on("dialog", (d) => d.accept()); // confirm() before deletes
    page.on("pageerror", (e) => {
      throw e;
    });
    if (shots) await mkdir(shots, { recursive: true });
  });

  after(async () => {
    if (page) {
      // Leave nothing behind.
      await page.evaluate((db) => api("DELETE", ["dbs", db]), db).catch(() => {});
    }
    await browser?.close();
  });

  const shot = async (name) => {
    if (shots) await page.screenshot({ path: `${shots}/${name}.png` });
  };
  const status = () => page.$eval("#status", (el) => el.textContent);
  const fill = async (selector, value) => {
    await page.$eval(selector, (el, v) => {
      el.value = v;
      el.dispatchEvent(new Event("input"));
    }, value);
  };
  const dialog = async (values) => {
    await page.waitForSelector("#dialog[open]");
    for (const [name, value] of Object.entries(values)) {
      await page.$eval(`#dialog [name="${name}"]`, (el, v) => {
        el.value = v;
      }, value);
    }
    await page.click("#dialog-ok");
    await page.waitForFunction(() => !document.querySelector("#dialog").open);
  };
  const rowIds = () => page.$$eval("#items tr", (rows) => rows.map((r) => r.dataset.id));

  it("opens without asking for the emulator's key", async () => {
    await page.goto(new URL("/_explorer/index.html", endpoint).href);
    await page.waitForSelector("#tree");
    assert.equal(await page.$eval("#keybar", (el) => el.hidden), true);
  });

  it("creates a database and a container with a time to live", async () => {
    await page.click("#new-db");
    await dialog({ id: db });
    await page.waitForFunction((db) => [...document.querySelectorAll("#tree .db")].some((e) => e.textContent === db), {}, db);
    await page.click("#new-coll");
    await dialog({ db, id: "items", pk: "/pk", ttl: "3600" });
    await page.waitForFunction(() => document.querySelector("#coll-title")?.textContent.endsWith("/ items"));
    assert.equal(await page.$eval("#coll-ttl", (el) => el.textContent), "3600 s");
    await page.waitForFunction(() =>
      /purge backlog \d+ items? · awaiting erasure \d+ items? \(deadline 1 h\)/.test(document.querySelector("#coll-backlog").textContent));
    // The service's validation message is shown: an id with a slash.
    await page.click("#new-coll");
    await dialog({ db, id: "bad/id", pk: "/pk", ttl: "" });
    await page.waitForFunction(() => document.querySelector("#status").className === "error");
    // A time to live that is no number is the service's to refuse, not
    // dropped.
    await page.evaluate(() => say(""));
    await page.click("#new-coll");
    await dialog({ db, id: "badttl", pk: "/pk", ttl: "abc" });
    await page.waitForFunction(() => document.querySelector("#status").className === "error");
    assert.equal(await page.evaluate(async (db) => (await api("GET", ["dbs", db, "colls", "badttl"])).status, db), 404);
  });

  it("creates items and shows when each expires", async () => {
    for (const item of [
      { id: "keep", pk: "p", n: 1, ttl: -1 },
      { id: "short", pk: "p", n: 2, ttl: 3 },
      { id: "other", pk: "q", n: 3 },
    ]) {
      await page.click("#new-item");
      await fill("#item-json", JSON.stringify(item));
      await page.click("#save-item");
      await page.waitForFunction((id) => document.querySelector("#status").textContent.startsWith(`Saved ${id}`), {}, item.id);
    }
    assert.deepEqual((await rowIds()).sort(), ["keep", "other", "short"]);
    const cells = await page.$$eval("#items tr", (rows) => Object.fromEntries(rows.map((r) => [r.dataset.id, r.lastChild.textContent])));
    assert.equal(cells.keep, "never");
    assert.match(cells.other, /^(59m|1h)/);
    await shot("items");
    // Filtered by partition key.
    await fill("#pk-filter", "q");
    await page.click("#apply-filter");
    await page.waitForFunction(() => document.querySelectorAll("#items tr").length === 1);
    assert.deepEqual(await rowIds(), ["other"]);
    await fill("#pk-filter", "");
    await page.click("#apply-filter");
    await page.waitForFunction(() => document.querySelectorAll("#items tr").length >= 2);
  });

  it("shows an item expire on screen, and no longer lists it", async () => {
    await page.waitForFunction(() => document.querySelector('#items tr[data-id="short"]')?.classList.contains("expired"), { timeout: 10000 });
    await shot("expired");
    await page.click("#apply-filter");
    await page.waitForFunction(() => !document.querySelector('#items tr[data-id="short"]') && document.querySelector('#items tr[data-id="keep"]'));
  });

  it("edits an item, and shows a conflict as such", async () => {
    await page.click('#items tr[data-id="keep"]');
    await page.waitForSelector("#item-json");
    const doc = JSON.parse(await page.$eval("#item-json", (el) => el.value));
    doc.n = 42;
    await fill("#item-json", JSON.stringify(doc));
    await page.click("#save-item");
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Saved keep"));
    // Someone else changes the item; saving the stale copy is a conflict.
    const stale = await page.$eval("#item-json", (el) => el.value);
    await page.evaluate((db) => api("PUT", ["dbs", db, "colls", "items", "docs", "keep"], {
      body: { id: "keep", pk: "p", n: 7, ttl: -1 },
      headers: { "x-ms-documentdb-partitionkey": '["p"]' },
    }), db);
    await fill("#item-json", stale);
    await page.click("#save-item");
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Conflict"));
    // Invalid JSON is pointed out before anything is sent.
    await fill("#item-json", "{ not json");
    assert.notEqual(await page.$eval("#json-error", (el) => el.textContent), "");
  });

  it("runs a query, with its charge and pages", async () => {
    await page.click("#sub-query");
    await page.waitForSelector("#query-text");
    await fill("#query-text", "SELECT VALUE c.n FROM c ORDER BY c.n");
    await page.click("#run-query");
    await page.waitForFunction(() => document.querySelector("#query-stats").textContent.includes("results"));
    assert.deepEqual(JSON.parse(await page.$eval("#query-results", (el) => el.textContent)), [3, 7]);
    assert.match(await page.$eval("#query-stats", (el) => el.textContent), /2 results in 1 page\(s\) · [0-9.]+ RU/);
    await shot("query");
    // A query's error is shown as its message, not as the JSON it came in.
    await fill("#query-text", "SELECT VALUE c.n FROM c WHERE");
    await page.click("#run-query");
    await page.waitForFunction(() => document.querySelector("#status").className === "error");
    const err = await status();
    assert.ok(!err.includes("{") && /syntax/i.test(err), err);
  });

  it("follows the change feed", async () => {
    await page.click("#sub-feed");
    await page.waitForSelector("#feed");
    await page.evaluate((db) => api("POST", ["dbs", db, "colls", "items", "docs"], {
      body: { id: "fresh", pk: "p" },
      headers: { "x-ms-documentdb-partitionkey": '["p"]' },
    }), db);
    await page.waitForFunction(() => [...document.querySelectorAll("#feed tr")].some((r) => r.firstChild.textContent === "fresh"), { timeout: 10000 });
  });

  it("writes the items of a hierarchical partition key", async () => {
    await page.evaluate(async (db) => {
      const hk = must(await api("POST", ["dbs", db, "colls"], {
        body: { id: "hk", partitionKey: { paths: ["/tenant", "/user"], kind: "MultiHash", version: 2 } },
      }), 201).body;
      await loadTree();
      await openContainer(db, hk);
    }, db);
    await page.waitForFunction(() => document.querySelector("#coll-pk")?.textContent === "/tenant, /user");
    await page.click("#new-item");
    await fill("#item-json", JSON.stringify({ id: "h1", tenant: "t1", user: "u1", n: 1 }));
    await page.click("#save-item");
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Saved h1"));
    const key = await page.$eval('#items tr[data-id="h1"]', (tr) => tr.children[1].textContent);
    assert.equal(key, '["t1","u1"]');
    await fill("#pk-filter", '["t1","u1"]');
    await page.click("#apply-filter");
    await page.waitForFunction(() => document.querySelectorAll("#items tr").length === 1);
    await page.click('#items tr[data-id="h1"]');
    await page.waitForSelector("#delete-item:not([hidden])");
    await page.click("#delete-item");
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Deleted h1"));
    // A key without its second level is shown as the filter takes it.
    await page.evaluate(async (db) => {
      must(await api("POST", ["dbs", db, "colls", "hk", "docs"], { body: { id: "h2", tenant: "t1" }, headers: { "x-ms-documentdb-partitionkey": '["t1",{}]' } }), 201);
    }, db);
    await fill("#pk-filter", "");
    await page.click("#apply-filter");
    await page.waitForSelector('#items tr[data-id="h2"]');
    const partial = await page.$eval('#items tr[data-id="h2"]', (tr) => tr.children[1].textContent);
    assert.equal(partial, '["t1",{}]');
    await fill("#pk-filter", partial);
    await page.click("#apply-filter");
    await page.waitForFunction(() => [...document.querySelectorAll("#items tr")].map((r) => r.dataset.id).join() === "h2");
  });

  it("reaches databases and items whose names a path cannot, and keeps large integers", async () => {
    // A database whose name holds "%41", which a path by name reaches as
    // "A", must not hide the others; items with "/" or "%" in their ids
    // are saved and deleted; an integer past 2^53 survives an edit.
    const odd = `${db}%41`;
    await page.evaluate(async (db, odd) => {
      must(await api("POST", ["dbs"], { body: { id: odd } }), 201);
      const c = must(await api("POST", ["dbs", db, "colls"], { body: { id: "odd", partitionKey: { paths: ["/pk"] } } }), 201).body;
      for (const id of ["a/b", "50%25off"]) {
        must(await api("POST", ["dbs", db, "colls", "odd", "docs"], { body: { id, pk: "p" }, headers: { "x-ms-documentdb-partitionkey": '["p"]' } }), 201);
      }
      // An object where the key is: the key is undefined, sent as {}.
      must(await api("POST", ["dbs", db, "colls", "odd", "docs"], { body: { id: "objkey", pk: { x: 1 } }, headers: { "x-ms-documentdb-partitionkey": "[{}]" } }), 201);
      must(await api("POST", ["dbs", db, "colls", "odd", "docs"], {
        body: '{"id":"big","pk":"p","n":9007199254740993}',
        headers: { "x-ms-documentdb-partitionkey": '["p"]' },
      }), 201);
      await loadTree();
      await openContainer(db, c);
    }, db, odd);
    const dbs = await page.$$eval("#tree .db", (els) => els.map((e) => e.textContent));
    assert.ok(dbs.includes(db) && dbs.includes(odd), `the tree lists ${JSON.stringify(dbs)}`);
    assert.equal(await page.$eval("#keybar", (el) => el.hidden), true, "the page asked for the key again");
    for (const id of ["a/b", "50%25off"]) {
      await page.waitForSelector(`#items tr[data-id="${id}"]`);
      await page.click(`#items tr[data-id="${id}"]`);
      await fill("#item-json", JSON.stringify({ id, pk: "p", edited: true }));
      await page.click("#save-item");
      await page.waitForFunction((id) => document.querySelector("#status").textContent.startsWith(`Saved ${id}`), {}, id);
      await page.waitForSelector("#delete-item:not([hidden])");
      await page.click("#delete-item");
      await page.waitForFunction((id) => document.querySelector("#status").textContent.startsWith(`Deleted ${id}`), {}, id);
    }
    await page.waitForSelector('#items tr[data-id="objkey"]');
    assert.equal(await page.$eval('#items tr[data-id="objkey"]', (tr) => tr.children[1].textContent), "{}");
    await page.click('#items tr[data-id="objkey"]');
    await page.click("#save-item");
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Saved objkey"));
    await page.waitForSelector("#delete-item:not([hidden])");
    await page.click("#delete-item");
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Deleted objkey"));
    await page.waitForSelector('#items tr[data-id="big"]');
    await page.click('#items tr[data-id="big"]');
    const text = await page.$eval("#item-json", (el) => el.value);
    assert.match(text, /9007199254740993/);
    await fill("#item-json", text.replace('"pk": "p"', '"pk": "p", "edited": true'));
    await page.click("#save-item");
    await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("Saved big"));
    const stored = await page.evaluate(async (db) => {
      const r = must(await api("GET", ["dbs", db, "colls", "odd", "docs", "big"], { headers: { "x-ms-documentdb-partitionkey": '["p"]' } }), 200);
      return JSON.stringify(r.body.n) + (r.body.edited ? " edited" : "");
    }, db);
    assert.equal(stored, "9007199254740993 edited");
    await page.evaluate(async (odd) => {
      const d = (must(await api("GET", ["dbs"]), 200).body.Databases || []).find((x) => x.id === odd);
      must(await api("DELETE", ["dbs", d._rid], { byRid: true }), 204);
    }, odd);
  });

  it("submits a dialog with Enter", async () => {
    const id = `${db}-enter`;
    await page.click("#new-db");
    await page.waitForSelector("#dialog[open]");
    await page.type('#dialog [name="id"]', id);
    await page.keyboard.press("Enter");
    await page.waitForFunction((id) => document.querySelector("#status").textContent === `Database ${id} created.`, {}, id);
    await page.evaluate((id) => api("DELETE", ["dbs", id]), id);
  });

  it("runs ORDER BY and aggregates over several partition key ranges", async () => {
    // More than 6,000 RU/s makes a container of several ranges.
    await page.click("#new-coll");
    await dialog({ db, id: "wide", pk: "/pk", ttl: "", throughput: "12000" });
    await page.waitForFunction(() => document.querySelector("#coll-title")?.textContent.endsWith("/ wide"));
    const ranges = await page.evaluate(async (db) => {
      for (let n = 0; n < 20; n++) {
        must(await api("POST", ["dbs", db, "colls", "wide", "docs"], {
          body: { id: `w${n}`, pk: `p${n}`, n },
          headers: { "x-ms-documentdb-partitionkey": JSON.stringify([`p${n}`]) },
        }), 201);
      }
      return must(await api("GET", ["dbs", db, "colls", "wide", "pkranges"]), 200).body.PartitionKeyRanges.length;
    }, db);
    assert.ok(ranges > 1, `${ranges} range(s)`);
    await page.click("#sub-query");
    await page.waitForSelector("#query-text");
    for (const [query, want] of [
      ["SELECT VALUE COUNT(1) FROM c", [20]],
      ["SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n DESC", [19, 18, 17]],
    ]) {
      await fill("#query-text", query);
      await page.$eval("#query-stats", (el) => (el.textContent = ""));
      await page.click("#run-query");
      await page.waitForFunction(() => document.querySelector("#query-stats").textContent.includes("results") || document.querySelector("#status").className === "error");
      assert.equal(await status(), "");
      assert.deepEqual(JSON.parse(await page.$eval("#query-results", (el) => el.textContent)), want);
    }
  });

  it("asks for the key again when the server refuses the one it has", async () => {
    const wrong = Buffer.alloc(64, 7).toString("base64");
    await page.evaluate((k) => sessionStorage.setItem("mayfly-key", k), wrong);
    await page.reload();
    await page.waitForFunction(() => !document.querySelector("#keybar").hidden);
    await page.waitForFunction(() => document.querySelector("#status").className === "error");
    await page.evaluate(async () => {
      const key = (await (await fetch("config.json")).json()).emulatorKey;
      document.querySelector("#key").value = key;
    });
    await page.click("#key-save");
    await page.waitForFunction((db) => document.querySelector("#keybar").hidden &&
      [...document.querySelectorAll("#tree .db")].some((e) => e.textContent === db), {}, db);
  });

  it("gives the connection string and the certificate", async () => {
    await page.click("#tab-connect");
    const conn = await page.$eval("#conn", (el) => el.textContent);
    assert.match(conn, /^AccountEndpoint=https:\/\/.+\/;AccountKey=C2y6yDjf5/);
    const pem = await page.evaluate(async () => (await fetch("emulator.pem")).text());
    assert.match(pem, /BEGIN CERTIFICATE/);
    await shot("connect");
    assert.equal(await status(), await status()); // the page is still alive
  });
});
