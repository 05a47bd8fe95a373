// Random queries run two ways against the same documents: in a container
// whose items share one partition key, asked with that key, so that the
// server answers each query whole; and in a container whose items are
// spread over many keys (and, with 24,000 RU/s, over several ranges), asked
// across partitions, so that the SDK plans the query, runs it range by
// range and merges. Both answers must agree: ORDER BY results in order,
// others as multisets. ORDER BY queries select their sort key, since ties
// may come in any order. SELECT DISTINCT VALUE is left out: the SDK's
// unordered DISTINCT drops falsy values (0, false, "", null) whatever the
// server returns.
//
// Environment: see mayfly.js; QUERYDIFF_N queries (default 200) from seed
// QUERYDIFF_SEED (default 2, which finds each of the plan bugs the test was
// written for on the tree before their fixes, 8233be5).

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { randomUUID } from "node:crypto";
import { CosmosClient } from "@azure/cosmos";
import { endpoint, key, serverCertificate } from "./mayfly.js";

describe("cross-partition queries against the same queries served whole", () => {
  let database, one, many;
  let seed = Number(process.env.QUERYDIFF_SEED || 2);
  // A linear congruential generator, read from its high bits: its low bits
  // cycle quickly, and would draw from few of the templates.
  const rnd = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor(seed / 65536) % n;
  };

  before(async () => {
    const agent = new https.Agent({ ca: await serverCertificate() });
    const client = new CosmosClient({ endpoint, key, agent });
    ({ database } = await client.databases.create({ id: `js-querydiff-${randomUUID()}` }));
    ({ container: one } = await database.containers.create({ id: "one", partitionKey: { paths: ["/pk"] } }));
    ({ container: many } = await database.containers.create({ id: "many", partitionKey: { paths: ["/pk"] }, throughput: 24000 }));
    const vals = [0, 1, 2, 3, 5, 8, -1, 2.5, "a", "b", "ab", true, false, null];
    const docs = [];
    for (let i = 0; i < 80; i++) {
      const d = { id: `d${i}` };
      if (rnd(6)) d.a = vals[rnd(vals.length)];
      if (rnd(4)) d.b = rnd(10);
      if (rnd(3)) d.s = ["x", "y", "z", "xy"][rnd(4)];
      if (rnd(3)) d.arr = [rnd(3), rnd(3)];
      if (rnd(5)) d.o = { k: rnd(4) };
      docs.push(d);
    }
    await Promise.all(docs.map((d) => one.items.create({ ...d, pk: "all" })));
    await Promise.all(docs.map((d, i) => many.items.create({ ...d, pk: "p" + (i % 13) })));
  });

  after(async () => {
    if (database) await database.delete();
  });

  it("agree", async () => {
    const fields = ["c.a", "c.b", "c.s", "c.o.k", "c.arr[0]"];
    const f = () => fields[rnd(fields.length)];
    const dir = () => ["", " DESC"][rnd(2)];
    const where = () =>
      ["", ` WHERE ${f()} > ${rnd(5)}`, ` WHERE IS_DEFINED(${f()})`, ` WHERE ${f()} = ${rnd(4)}`, ` WHERE ${f()} != "x"`, ` WHERE ARRAY_CONTAINS(c.arr, ${rnd(3)})`][rnd(6)];
    const templates = [
      () => `SELECT VALUE COUNT(1) FROM c${where()}`,
      () => `SELECT VALUE SUM(c.b) FROM c${where()}`,
      () => `SELECT VALUE AVG(c.b) FROM c${where()}`,
      () => `SELECT VALUE MIN(${f()}) FROM c${where()}`,
      () => `SELECT VALUE MAX(${f()}) FROM c${where()}`,
      () => `SELECT MIN(${f()}) AS mi, MAX(${f()}) AS ma, COUNT(1) AS n FROM c${where()}`,
      () => `SELECT ${f()} AS k, COUNT(1) AS n, SUM(c.b) AS s FROM c${where()} GROUP BY ${f()}`,
      () => `SELECT VALUE COUNT(1) FROM c${where()} GROUP BY ${f()}`,
      () => `SELECT DISTINCT ${f()} AS v FROM c${where()}`,
      () => { const k = f(); return `SELECT ${k} AS k FROM c${where()} ORDER BY ${k}${dir()}`; },
      () => { const k = f(); return `SELECT TOP ${1 + rnd(10)} ${k} AS k FROM c${where()} ORDER BY ${k}${dir()}`; },
      () => { const k = f(); return `SELECT ${k} AS k FROM c${where()} ORDER BY ${k}${dir()} OFFSET ${rnd(20)} LIMIT ${1 + rnd(20)}`; },
      () => { const k = f(); return `SELECT DISTINCT ${k} AS k FROM c${where()} ORDER BY ${k}`; },
      () => `SELECT VALUE COUNTIF(${f()} > 1) FROM c${where()}`,
      () => `SELECT VALUE MAKESET(c.s) FROM c${where()}`,
      () => `SELECT VALUE {n: COUNT(1), m: MAX(c.b)} FROM c${where()}`,
      () => `SELECT c.id, ${f()} AS v FROM c${where()}`,
      () => `SELECT VALUE c.id FROM c JOIN t IN c.arr${where()}`,
      () => `SELECT VALUE c.id FROM c${where()} OFFSET ${rnd(30)} LIMIT ${1 + rnd(30)}`,
      () => `SELECT TOP ${1 + rnd(9)} VALUE COUNT(1) FROM c${where()}`,
      () => `SELECT c.s AS s, c.b AS b, COUNT(1) AS n FROM c${where()} GROUP BY c.s, c.b`,
      () => `SELECT VALUE MAX(c.b) FROM c${where()} GROUP BY c.s`,
      () => `SELECT VALUE AVG(c.b) FROM c${where()} GROUP BY c.s`,
      () => `SELECT c.s, AVG(c.b) AS a, MIN(c.a) AS mi FROM c${where()} GROUP BY c.s`,
      () => `SELECT DISTINCT c.s, c.b FROM c${where()}`,
      () => `SELECT DISTINCT TOP ${1 + rnd(5)} c.s AS s FROM c${where()} ORDER BY c.s`,
      () => `SELECT c.b AS k FROM c${where()} ORDER BY c.b${dir()}, c.s${dir()}`,
      () => `SELECT VALUE EXISTS(SELECT VALUE t FROM t IN c.arr WHERE t > 1) FROM c${where()}`,
      () => `SELECT VALUE c.id FROM c WHERE c.b IN (1, 2, 3)${rnd(2) ? " AND c.s = 'x'" : ""}`,
      () => `SELECT VALUE SUM(t) FROM c JOIN t IN c.arr${where()}`,
      () => `SELECT VALUE [MIN(c.b), MAX(c.b)] FROM c${where()}`,
      () => `SELECT COUNT(1) AS n FROM c${where()}`,
      () => `SELECT VALUE MAKELIST(c.s) FROM c WHERE c.b = ${rnd(10)}`,
      () => `SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.s FROM c)`,
      () => `SELECT TOP ${1 + rnd(5)} c.id FROM c${where()}`,
      () => { const k = f(); return `SELECT TOP ${1 + rnd(30)} ${k} AS k FROM c${where()} ORDER BY ${k}${dir()}`; },
      () => `SELECT VALUE UPPER(c.s) FROM c${where()}`,
      () => `SELECT VALUE {t: IS_NUMBER(c.a), s: IS_STRING(c.a), b: IS_BOOL(c.a), n: IS_NULL(c.a)} FROM c${where()}`,
      () => `SELECT c.s AS s, MAX(c.a) AS m FROM c${where()} GROUP BY c.s`,
      () => `SELECT VALUE MIN(c.a) FROM c${where()}`,
      () => `SELECT VALUE MAX(c.a) FROM c${where()}`,
      () => `SELECT VALUE AVG(c.a) FROM c${where()}`,
      () => `SELECT VALUE c.a FROM c WHERE c.a > 'a' OR c.a < 2`,
      () => `SELECT DISTINCT VALUE {s: c.s} FROM c${where()}`,
      () => `SELECT VALUE COUNT(1) FROM c WHERE STARTSWITH(c.s, 'x') AND c.b BETWEEN 2 AND 6`,
      () => { const k = f(); return `SELECT DISTINCT ${k} AS k FROM c${where()} ORDER BY ${k} DESC`; },
      () => `SELECT c.o.k AS k, COUNT(1) AS n FROM c${where()} GROUP BY c.o.k`,
      () => `SELECT TOP ${1 + rnd(4)} VALUE c.b FROM c WHERE IS_DEFINED(c.b) ORDER BY c.b DESC`,
    ];
    const canon = (v) =>
      JSON.stringify(v, (k, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x));
    const run = async (c, q, opts) => {
      try {
        return { ok: (await c.items.query(q, opts).fetchAll()).resources };
      } catch (e) {
        return { err: `${e.code} ${(e.message || "").split("\n")[0]}` };
      }
    };
    const differences = [];
    let unmergeable = 0;
    for (let n = 0; n < Number(process.env.QUERYDIFF_N || 200); n++) {
      const q = templates[rnd(templates.length)]();
      const whole = await run(one, q, { partitionKey: "all" });
      const merged = await run(many, q, { maxItemCount: 1 + rnd(7) });
      const ordered = /ORDER BY/.test(q);
      // OFFSET or TOP without ORDER BY takes rows in an order the two
      // containers need not share: compare how many.
      const counted = !ordered && /OFFSET|TOP/.test(q) && !/COUNT/.test(q);
      // MAKELIST and MAKESET gather values in no set order.
      const gathered = /MAKE(LIST|SET)/.test(q);
      const norm = (r) =>
        r.err ? "error " + r.err : counted ? String(r.ok.length) : gathered ? canon(r.ok.map((x) => [...x].sort())) : ordered ? canon(r.ok) : canon(r.ok.map(canon).sort());
      // The SDK refuses to merge ORDER BY values of several types across
      // ranges (documents without the property among them), and a range's
      // MIN or MAX of null (typeof "object" to its comparer), whatever the
      // server returns: such a query is left out.
      // An AVG or SUM over a value that is not a number is undefined; the
      // SDK adds up the ranges whose values are all numbers and leaves out
      // the others, so its answer is theirs.
      const partial = /VALUE (AVG|SUM)\(/.test(q) && whole.ok && whole.ok.length === 0;
      if (partial || !whole.err && merged.err && /mixed types|unrecognizable type|compare an object type/.test(merged.err)) {
        unmergeable++;
        continue;
      }
      if (norm(whole) !== norm(merged)) differences.push(`${q}\n  whole:  ${norm(whole)}\n  merged: ${norm(merged)}`);
    }
    assert.deepEqual(differences, []);
    assert.ok(unmergeable < Number(process.env.QUERYDIFF_N || 200) / 4, `${unmergeable} queries the SDK could not merge`);
  });
});
