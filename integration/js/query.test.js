// The JavaScript SDK's query pipeline against a running Mayfly: a
// cross-partition ORDER BY, aggregates and a parameterised filter. The SDK
// asks for a query plan, is refused a direct cross-partition ORDER BY with
// 400/1004, and then runs the query range by range itself.
//
// Environment: see mayfly.js.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { randomUUID } from "node:crypto";
import { CosmosClient, PartitionKeyKind } from "@azure/cosmos";
import { endpoint, key, serverCertificate } from "./mayfly.js";

// pageByToken drains query page by page, each page a new query from the
// last page's continuation token, as an application resumes one, failing
// past limit rows.
async function pageByToken(container, query, maxItemCount, limit) {
  let token;
  const seen = [];
  do {
    const page = await container.items
      .query(query, { maxItemCount, continuationToken: token, enableQueryControl: true })
      .fetchNext();
    seen.push(...page.resources);
    token = page.continuationToken;
    assert.ok(seen.length <= limit, `${query}: more rows than items: ${seen.length}`);
  } while (token);
  return seen;
}

describe("JavaScript SDK queries against Mayfly", () => {
  let client;
  let database;
  let container;
  const items = [];
  for (let i = 0; i < 30; i++) {
    items.push({ id: `q${i}`, pk: `p${i % 5}`, n: (i * 7) % 30, kind: i % 2 === 0 ? "even" : "odd" });
  }

  before(async () => {
    const agent = new https.Agent({ ca: await serverCertificate() });
    client = new CosmosClient({ endpoint, key, agent });
    ({ database } = await client.databases.create({ id: `js-query-${randomUUID()}` }));
    ({ container } = await database.containers.create({ id: "items", partitionKey: { paths: ["/pk"] } }));
    for (const it of items) await container.items.create(it);
  });

  after(async () => {
    if (database) await database.delete();
  });

  it("runs a cross-partition ORDER BY", async () => {
    const { resources } = await container.items
      .query("SELECT c.id, c.n FROM c ORDER BY c.n DESC", { maxItemCount: 7 })
      .fetchAll();
    const want = [...items].sort((a, b) => b.n - a.n).map((i) => i.n);
    assert.deepEqual(resources.map((r) => r.n), want);
  });

  it("resumes a cross-partition ORDER BY from continuation tokens", async () => {
    // Page by page, each page a new query from the last page's token: the
    // SDK resumes each range with a filter on the ORDER BY value in place
    // of "true" and the range's own token. c.kind has two values, so pages
    // end inside groups of equal values; descending, the SDK drops the
    // rows it returned of such a group by descending _rid.
    const queries = [
      "SELECT c.id, c.n FROM c ORDER BY c.n",
      "SELECT c.id, c.kind FROM c ORDER BY c.kind",
      "SELECT c.id, c.kind FROM c ORDER BY c.kind DESC",
      "SELECT c.id, c.kind FROM c WHERE c.n >= 0 ORDER BY c.kind DESC",
    ];
    for (const query of queries) {
      const { resources: all } = await container.items.query(query).fetchAll();
      assert.equal(all.length, items.length, query);
      const seen = await pageByToken(container, query, 4, items.length);
      assert.deepEqual(seen.map((r) => r.id), all.map((r) => r.id), query);
    }
  });

  it("orders the rows of a list of partition keys, page by page", async () => {
    // The server walks the listed partitions' entries merged in the
    // ORDER BY's order; the SDK sends the query to each range, merges them
    // and resumes each with its filter on the ORDER BY value.
    const cases = [
      ["SELECT c.id, c.n FROM c WHERE c.pk IN ('p1', 'p3') ORDER BY c.n DESC", (i) => i.pk === "p1" || i.pk === "p3", (a, b) => b.n - a.n],
      ["SELECT c.id, c.n FROM c WHERE (c.pk = 'p0' OR c.pk = 'p4') AND c.n > 5 ORDER BY c.n", (i) => (i.pk === "p0" || i.pk === "p4") && i.n > 5, (a, b) => a.n - b.n],
    ];
    for (const [query, keep, order] of cases) {
      const want = items.filter(keep).sort(order).map((i) => i.id);
      const seen = await pageByToken(container, query, 2, items.length);
      assert.deepEqual(seen.map((r) => r.id), want, query);
    }
    // A TOP, drained by one iterator. (Resumed from tokens over a single
    // range, SDK 4.10 does not end a TOP ... ORDER BY, with or without a
    // list: its token manager makes a token from a page's last row while
    // a range is left, whatever the limit, so past the TOP's last row the
    // resumed range's rows, which the limit of 0 drops, bring it back.)
    const { resources } = await container.items
      .query("SELECT TOP 3 c.id, c.n FROM c WHERE ARRAY_CONTAINS(['p2', 'p3'], c.pk) ORDER BY c.n", { maxItemCount: 2 })
      .fetchAll();
    const top = items.filter((i) => i.pk === "p2" || i.pk === "p3").sort((a, b) => a.n - b.n).slice(0, 3);
    assert.deepEqual(resources.map((r) => r.id), top.map((i) => i.id));
  });

  it("reads the users a filter lists under a tenant of a hierarchical key", async () => {
    // c.tenant = … AND c.user IN (…) fixes both paths of the key: the
    // server reads the listed users' partitions, and merges their entries
    // for the ORDER BY, page by page, range by range.
    const { container: keyed } = await database.containers.create({
      id: "tenants",
      partitionKey: { paths: ["/tenant", "/user"], kind: PartitionKeyKind.MultiHash, version: 2 },
    });
    const docs = [];
    for (let i = 0; i < 48; i++) docs.push({ id: `h${i}`, tenant: `t${i % 2}`, user: `u${i % 8}`, n: (i * 5) % 17 });
    for (const d of docs) await keyed.items.create(d);
    const listed = docs.filter((d) => d.tenant === "t1" && ["u1", "u3", "u9"].includes(d.user));
    const byN = (a, b) => a.n - b.n || 0;
    const { resources: rows } = await keyed.items
      .query("SELECT c.id FROM c WHERE c.tenant = 't1' AND c.user IN ('u1', 'u3', 'u9')", { maxItemCount: 5 })
      .fetchAll();
    assert.deepEqual(rows.map((r) => r.id).sort(), listed.map((d) => d.id).sort());
    const { resources: count } = await keyed.items
      .query("SELECT VALUE COUNT(1) FROM c WHERE c.tenant = 't1' AND (c.user = 'u1' OR c.user = 'u3')")
      .fetchAll();
    assert.deepEqual(count, [listed.length]);
    // Resumed from each page's token, the SDK skips the rows of a group of
    // equal values it returned by their _rids: the server keeps a range's
    // ties in _rid order, under a prefix the WHERE clause pins too.
    const tenant = docs.filter((d) => d.tenant === "t1");
    for (const [query, want] of [
      ["SELECT c.id, c.n FROM c WHERE c.tenant = 't1' AND c.user IN ('u1', 'u3', 'u9') ORDER BY c.n", listed],
      ["SELECT c.id, c.n FROM c WHERE c.tenant = 't1' ORDER BY c.n", tenant],
    ]) {
      const seen = await pageByToken(keyed, query, 4, docs.length);
      assert.deepEqual(seen.map((r) => r.n), [...want].sort(byN).map((d) => d.n), query);
      assert.deepEqual(seen.map((r) => r.id).sort(), want.map((d) => d.id).sort(), query);
    }
  });

  it("pages an ORDER BY on two keys served by a composite index", async () => {
    // The first key has three values, so every page falls inside a group
    // of equal first values, which the server walks through the composite
    // index, resuming each range from its own token. (Resumed as a new
    // query from a page's token, this SDK filters each key on its own,
    // c.g >= 0 AND c.n >= 54, which drops rows of the next group on any
    // server.)
    const { container: keyed } = await database.containers.create({
      id: "keyed",
      partitionKey: { paths: ["/pk"] },
      indexingPolicy: {
        includedPaths: [{ path: "/*" }],
        compositeIndexes: [
          [{ path: "/g" }, { path: "/n" }],
          [{ path: "/g" }, { path: "/n", order: "descending" }],
        ],
      },
    });
    const docs = [];
    for (let i = 0; i < 60; i++) docs.push({ id: `k${i}`, pk: `p${i % 7}`, g: i % 3, n: (i * 11) % 60 });
    for (const d of docs) await keyed.items.create(d);
    for (const [query, cmp] of [
      ["SELECT c.id FROM c ORDER BY c.g, c.n", (a, b) => a.g - b.g || a.n - b.n],
      ["SELECT c.id FROM c ORDER BY c.g DESC, c.n DESC", (a, b) => b.g - a.g || b.n - a.n],
      ["SELECT c.id FROM c ORDER BY c.g, c.n DESC", (a, b) => a.g - b.g || b.n - a.n],
      ["SELECT c.id FROM c WHERE c.n >= 10 ORDER BY c.g DESC, c.n", (a, b) => b.g - a.g || a.n - b.n],
    ]) {
      // Across partitions; then within one, twice: the second drain runs
      // once the server has built the composite's entries of each
      // partition, which the first asked for.
      for (const [pk, pause] of [[undefined, 0], ["p3", 0], ["p3", 1500]]) {
        await new Promise((resolve) => setTimeout(resolve, pause));
        const want = docs
          .filter((d) => (!query.includes("c.n >= 10") || d.n >= 10) && (pk === undefined || d.pk === pk))
          .sort(cmp)
          .map((d) => d.id);
        const iterator = keyed.items.query(query, { maxItemCount: 4, partitionKey: pk });
        const seen = [];
        while (iterator.hasMoreResults()) {
          const page = await iterator.fetchNext();
          seen.push(...page.resources.map((r) => r.id));
          assert.ok(seen.length <= docs.length, `${query}: more rows than items: ${seen.length}`);
        }
        assert.deepEqual(seen, want, `${query} (partition key ${pk})`);
      }
    }
  });

  it("reads computed properties, filtered, projected and ordered across partitions", async () => {
    const { container: computed } = await database.containers.create({
      id: "computed",
      partitionKey: { paths: ["/pk"] },
      computedProperties: [{ name: "cp_lower", query: "SELECT VALUE LOWER(c.name) FROM c" }],
      indexingPolicy: { includedPaths: [{ path: "/*" }, { path: "/cp_lower/?" }] },
    });
    const { resource: def } = await computed.read();
    assert.deepEqual(def.computedProperties, [{ name: "cp_lower", query: "SELECT VALUE LOWER(c.name) FROM c" }]);
    const names = ["Delta", "alpha", "CHARLIE", "bravo", "Echo"];
    for (let i = 0; i < 20; i++) await computed.items.create({ id: `n${i}`, pk: `p${i % 4}`, name: names[i % 5] });
    const { resources: found } = await computed.items
      .query("SELECT c.id, c.cp_lower FROM c WHERE c.cp_lower = 'charlie'")
      .fetchAll();
    assert.deepEqual(found.map((r) => r.cp_lower), Array(4).fill("charlie"));
    const { resources: ordered } = await computed.items
      .query("SELECT VALUE c.cp_lower FROM c ORDER BY c.cp_lower", { maxItemCount: 3 })
      .fetchAll();
    assert.deepEqual(ordered, names.map((n) => n.toLowerCase()).sort().flatMap((n) => Array(4).fill(n)));
    const { resources: stored } = await computed.items.query("SELECT * FROM c WHERE c.id = 'n0'").fetchAll();
    assert.equal(stored[0].cp_lower, undefined);
    await assert.rejects(
      database.containers.create({
        id: "badcomputed",
        partitionKey: { paths: ["/pk"] },
        computedProperties: [{ name: "cp", query: "SELECT VALUE c.a FROM c WHERE c.b = 1" }],
      }),
      (err) => err.code === 400,
    );
  });

  it("runs aggregates across partitions", async () => {
    const { resources: count } = await container.items.query("SELECT VALUE COUNT(1) FROM c").fetchAll();
    assert.deepEqual(count, [30]);
    const { resources: sum } = await container.items
      .query("SELECT VALUE SUM(c.n) FROM c WHERE c.kind = 'even'")
      .fetchAll();
    assert.deepEqual(sum, [items.filter((i) => i.kind === "even").reduce((s, i) => s + i.n, 0)]);
    const { resources: max } = await container.items.query("SELECT VALUE MAX(c.n) FROM c").fetchAll();
    assert.deepEqual(max, [29]);
    // Each range answers the plan's rewrite of the MAX with its count from
    // the index, reading the one document that holds its extreme, where
    // evaluating it read every item.
    const measured = await container.items
      .query("SELECT VALUE MAX(c.n) FROM c", { populateQueryMetrics: true })
      .fetchAll();
    assert.deepEqual(measured.resources, [29]);
    const retrieved = Object.values(measured.queryMetrics ?? {}).reduce((s, m) => s + m.retrievedDocumentCount, 0);
    assert.ok(retrieved >= 1 && retrieved <= 8, `the MAX retrieved ${retrieved} documents of ${items.length}`);
    // Over a list of partition keys each range answers from the listed
    // partitions it holds, each partition's answer with its count.
    const listed = items.filter((i) => i.pk === "p1" || i.pk === "p3");
    for (const [query, want] of [
      ["SELECT VALUE MAX(c.n) FROM c WHERE c.pk IN ('p1', 'p3')", Math.max(...listed.map((i) => i.n))],
      ["SELECT VALUE MIN(c.n) FROM c WHERE c.pk IN ('p1', 'p3') AND c.kind = 'odd'", Math.min(...listed.filter((i) => i.kind === "odd").map((i) => i.n))],
      ["SELECT VALUE SUM(c.n) FROM c WHERE ARRAY_CONTAINS(['p1', 'p3'], c.pk)", listed.reduce((s, i) => s + i.n, 0)],
      ["SELECT VALUE AVG(c.n) FROM c WHERE c.pk = 'p1' OR c.pk = 'p3'", listed.reduce((s, i) => s + i.n, 0) / listed.length],
    ]) {
      const { resources } = await container.items.query(query).fetchAll();
      assert.deepEqual(resources, [want], query);
    }
    // One aggregate per group, the groups spanning partitions.
    const { resources: perKind } = await container.items
      .query("SELECT VALUE COUNT(1) FROM c GROUP BY c.kind")
      .fetchAll();
    assert.deepEqual([...perKind].sort(), [15, 15]);
    const { resources: sums } = await container.items
      .query("SELECT VALUE SUM(c.n) FROM c GROUP BY c.kind")
      .fetchAll();
    const sumOf = (kind) => items.filter((i) => i.kind === kind).reduce((s, i) => s + i.n, 0);
    assert.deepEqual([...sums].sort((a, b) => a - b), [sumOf("even"), sumOf("odd")].sort((a, b) => a - b));
    // A GROUP BY over a list of partition keys, a group a page, the list's
    // last keys without items: each range reads its listed partitions'
    // groups, and no page but a range's only one is empty.
    const { resources: listedGroups } = await container.items
      .query("SELECT c.n % 4 AS r, COUNT(1) AS cnt, MAX(c.n) AS m FROM c WHERE c.pk IN ('p1', 'p3', 'none1', 'none2') GROUP BY c.n % 4", { maxItemCount: 1 })
      .fetchAll();
    const groups = new Map();
    for (const it of listed) {
      const g = groups.get(it.n % 4) ?? { r: it.n % 4, cnt: 0, m: -1 };
      groups.set(g.r, { r: g.r, cnt: g.cnt + 1, m: Math.max(g.m, it.n) });
    }
    const byR = (a, b) => a.r - b.r;
    assert.deepEqual([...listedGroups].sort(byR), [...groups.values()].sort(byR));
    // A VALUE made of aggregates is no one aggregate the client can merge:
    // the plan asks it for nothing, and the query is served whole.
    const { resources: whole } = await container.items
      .query("SELECT VALUE {n: COUNT(1), m: MAX(c.n), next: MIN(c.n) + 1} FROM c")
      .fetchAll();
    assert.deepEqual(whole, [{ n: 30, m: 29, next: 1 }]);
    const { resources: grouped } = await container.items
      .query("SELECT VALUE {kind: c.kind, n: COUNT(1)} FROM c GROUP BY c.kind")
      .fetchAll();
    assert.deepEqual([...grouped].sort((a, b) => a.kind.localeCompare(b.kind)), [{ kind: "even", n: 15 }, { kind: "odd", n: 15 }]);
    const { resources: inOne } = await container.items
      .query("SELECT VALUE {n: COUNT(1), m: MAX(c.n)} FROM c", { partitionKey: "p1" })
      .fetchAll();
    const p1 = items.filter((i) => i.pk === "p1");
    assert.deepEqual(inOne, [{ n: p1.length, m: Math.max(...p1.map((i) => i.n)) }]);
  });

  it("ranks by FullTextScore and RRF", async () => {
    const { container: texts } = await database.containers.create({ id: "texts", partitionKey: { paths: ["/pk"] } });
    for (const d of [
      { id: "d1", pk: "a", text: "The quick brown fox" },
      { id: "d2", pk: "b", text: "fox, fox; fox!" },
      { id: "d3", pk: "a", text: "a lazy dog" },
      { id: "d4", pk: "b", text: "quick dog jumps over the lazy fox and dogs" },
      { id: "d5", pk: "a" },
    ]) {
      await texts.items.create(d);
    }
    const ranked = "SELECT VALUE c.id FROM c ORDER BY RANK FullTextScore(c.text, 'fox')";
    const fused = "SELECT VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), FullTextScore(c.text, 'dog'))";
    // The plan asks the SDK for nothing, so it sends the query once and
    // Mayfly ranks across every range with the container's statistics.
    // Equal scores come in an order the service leaves open, which
    // follows where the ranges put the items: of the ranking by 'fox', the
    // three that hold it come first, by score; the fusion ranks every
    // document once.
    const byFox = (await texts.items.query(ranked).fetchAll()).resources;
    assert.deepEqual(byFox.slice(0, 3), ["d2", "d1", "d4"]);
    assert.deepEqual([...byFox.slice(3)].sort(), ["d3", "d5"]);
    assert.deepEqual([...(await texts.items.query(fused).fetchAll()).resources].sort(), ["d1", "d2", "d3", "d4", "d5"]);
    const { resources: inA } = await texts.items.query(ranked, { partitionKey: "a" }).fetchAll();
    assert.deepEqual(inA, ["d1", "d3", "d5"]);
  });

  it("filters by full-text containment through the words of a full-text index", async () => {
    const fullTextPolicy = { defaultLanguage: "en-US", fullTextPaths: [{ path: "/text", language: "en-US" }] };
    const { container: texts } = await database.containers.create({
      id: "indexedTexts",
      partitionKey: { paths: ["/pk"] },
      fullTextPolicy,
      indexingPolicy: { includedPaths: [{ path: "/*" }], fullTextIndexes: [{ path: "/text" }] },
    });
    const words = ["Fox", "foxes", "whale", "sea", "stories", "story", "blue"];
    const docs = [];
    for (let i = 0; i < 60; i++) {
      // A rare word too, whose few items the index names alone.
      const text = [words[i % 7], words[(i * 3) % 7], words[(i * 5 + 1) % 7], ...(i % 13 === 5 ? ["Narwhal"] : [])].join(i % 2 ? ", " : " ");
      docs.push({ id: `t${i}`, pk: `p${i % 5}`, text: i % 11 === 0 ? 42 : text });
    }
    for (const d of docs) await texts.items.create(d);
    const norm = (w) => w.toLowerCase().replace(/ies$/, "y").replace(/xes$/, "x").replace(/s$/, "");
    const has = (d, w) => typeof d.text === "string" && d.text.split(/[^A-Za-z0-9]+/).some((t) => norm(t) === w);
    const ids = (rows) => rows.map((r) => r.id).sort();
    const expect = (pred, among = docs) => among.filter(pred).map((d) => d.id).sort();
    // Drained two rows a page, range by range, with continuation tokens.
    const drain = async (query, options = {}) => (await texts.items.query(query, { maxItemCount: 2, ...options }).fetchAll()).resources;
    assert.deepEqual(ids(await drain("SELECT c.id FROM c WHERE FullTextContains(c.text, 'Foxes')")), expect((d) => has(d, "fox")));
    assert.deepEqual(ids(await drain("SELECT c.id FROM c WHERE FullTextContains(c.text, 'narwhals')")), expect((d) => has(d, "narwhal")));
    assert.deepEqual(
      ids(await drain({ query: "SELECT c.id FROM c WHERE FullTextContainsAll(c.text, @a, @b)", parameters: [{ name: "@a", value: "story" }, { name: "@b", value: "whale" }] })),
      expect((d) => has(d, "story") && has(d, "whale")),
    );
    assert.deepEqual(
      ids(await drain("SELECT c.id FROM c WHERE FullTextContainsAny(c.text, 'sea', 'blue')", { partitionKey: "p2" })),
      expect((d) => has(d, "sea") || has(d, "blue"), docs.filter((d) => d.pk === "p2")),
    );
  });

  it("searches by VectorDistance, most similar first", async () => {
    const vectorEmbeddingPolicy = {
      vectorEmbeddings: [
        { path: "/e", dataType: "float32", dimensions: 3, distanceFunction: "euclidean" },
        { path: "/d", dataType: "float32", dimensions: 3, distanceFunction: "dotproduct" },
      ],
    };
    const indexingPolicy = {
      includedPaths: [{ path: "/*" }],
      excludedPaths: [{ path: "/e/*" }, { path: "/d/*" }],
      vectorIndexes: [
        { path: "/e", type: "flat" },
        { path: "/d", type: "quantizedFlat" },
      ],
    };
    const { container: vectors, resource } = await database.containers.create({
      id: "vectors",
      partitionKey: { paths: ["/pk"] },
      vectorEmbeddingPolicy,
      indexingPolicy,
    });
    assert.deepEqual(resource.vectorEmbeddingPolicy, vectorEmbeddingPolicy);
    assert.deepEqual(resource.indexingPolicy.vectorIndexes, indexingPolicy.vectorIndexes);
    const docs = [];
    for (let i = 0; i < 24; i++) {
      const v = [(i * 7) % 11, (i * 5) % 13 - 6, (i * 3) % 7];
      docs.push({ id: `v${i}`, pk: `p${i % 6}`, e: v, d: v, text: i % 3 === 0 ? "red fox" : "blue whale" });
    }
    for (const d of docs) await vectors.items.create(d);
    // Items without a vector, or with one that cannot be scored, are no
    // neighbours: left out, though the Euclidean's ascending merge would
    // rank a missing score first.
    for (let i = 0; i < 6; i++) {
      const e = [undefined, "abc", [1, 2], null, [1, "2", 3], undefined][i];
      await vectors.items.create({ id: `u${i}`, pk: `p${i}`, e, d: e, text: "blue whale" });
    }
    const q = [2, -1, 3];
    const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
    const euclid = (a, b) => Math.sqrt(a.reduce((s, x, i) => s + (x - b[i]) ** 2, 0));
    const cosine = (a, b) => dot(a, b) / Math.sqrt(dot(a, a) * dot(b, b));
    const best = (score, desc, among = docs) =>
      [...among].sort((a, b) => (desc ? score(b.e, q) - score(a.e, q) : score(a.e, q) - score(b.e, q)) || a.id.localeCompare(b.id));
    const run = async (query, options) =>
      (await vectors.items.query({ query, parameters: [{ name: "@q", value: q }] }, options).fetchAll()).resources;

    // Euclidean by the policy: nearest first, scores rising.
    let rows = await run("SELECT TOP 5 c.id, VectorDistance(c.e, @q) AS score FROM c ORDER BY VectorDistance(c.e, @q)");
    assert.deepEqual(rows.map((r) => r.score), best(euclid, false).slice(0, 5).map((d) => euclid(d.e, q)));
    // The dot product by the policy: highest first.
    rows = await run("SELECT TOP 5 c.id, VectorDistance(c.d, @q) AS score FROM c ORDER BY VectorDistance(c.d, @q)");
    assert.deepEqual(rows.map((r) => r.score), best(dot, true).slice(0, 5).map((d) => dot(d.e, q)));
    // The options win over the policy.
    rows = await run("SELECT TOP 4 c.id, VectorDistance(c.e, @q, false, {distanceFunction: 'cosine'}) AS score FROM c ORDER BY VectorDistance(c.e, @q, false, {distanceFunction: 'cosine'})");
    const cos = best(cosine, true).slice(0, 4).map((d) => cosine(d.e, q));
    rows.forEach((r, i) => assert.ok(Math.abs(r.score - cos[i]) < 1e-12, `cosine ${r.score} against ${cos[i]}`));
    // OFFSET and LIMIT over the merged ranges.
    rows = await run("SELECT c.id FROM c ORDER BY VectorDistance(c.e, @q) OFFSET 3 LIMIT 4");
    assert.deepEqual(rows.map((r) => euclid(docs.find((d) => d.id === r.id).e, q)), best(euclid, false).slice(3, 7).map((d) => euclid(d.e, q)));
    // One partition, with a filter.
    rows = await run("SELECT TOP 3 c.id FROM c WHERE c.text = 'blue whale' ORDER BY VectorDistance(c.e, @q)", { partitionKey: "p1" });
    assert.deepEqual(rows.map((r) => r.id), best(euclid, false, docs.filter((d) => d.pk === "p1" && d.text === "blue whale")).slice(0, 3).map((d) => d.id));
    // Hybrid search: RRF of a vector component alone ranks as its ORDER BY;
    // fused with full text it is served whole, over every range.
    rows = await run("SELECT TOP 5 VALUE c.id FROM c ORDER BY RANK RRF(VectorDistance(c.e, @q))");
    assert.deepEqual(rows.map((id) => euclid(docs.find((d) => d.id === id).e, q)), best(euclid, false).slice(0, 5).map((d) => euclid(d.e, q)));
    rows = await run("SELECT TOP 5 VALUE c.id FROM c ORDER BY RANK RRF(FullTextScore(c.text, 'fox'), VectorDistance(c.e, @q))");
    assert.equal(new Set(rows).size, 5);
    // No sort order may be given.
    await assert.rejects(run("SELECT TOP 3 c.id FROM c ORDER BY VectorDistance(c.e, @q) ASC"), (err) => {
      assert.equal(err.code, 400);
      assert.match(err.message, /Specifying a sorting order \(ASC or DESC\) with VectorDistance function is not supported/);
      return true;
    });
    // The policy stays as created.
    await assert.rejects(
      vectors.replace({
        id: "vectors",
        partitionKey: { paths: ["/pk"] },
        vectorEmbeddingPolicy: { vectorEmbeddings: [{ path: "/e", dataType: "float32", dimensions: 4, distanceFunction: "euclidean" }] },
        indexingPolicy: { vectorIndexes: [{ path: "/e", type: "flat" }] },
      }),
      (err) => err.code === 400 && /cannot be modified in Collection Replace/.test(err.message),
    );
  });

  it("pages an ORDER BY on strings of 20 KB, in and across partitions", async () => {
    // Each page's token names a place among such values: it must stay
    // within the 16 KB of response headers Node.js accepts.
    const { container: long } = await database.containers.create({ id: "long", partitionKey: { paths: ["/pk"] } });
    const n = 60;
    for (let i = 0; i < n; i++) {
      await long.items.create({ id: `l${i}`, pk: `p${i % 3}`, s: String(i).padStart(3, "0") + "x".repeat(20000) });
    }
    for (const [opts, count] of [[{ maxItemCount: 7 }, n], [{ maxItemCount: 7, partitionKey: "p1" }, n / 3]]) {
      for (const dir of ["", " DESC"]) {
        const it = long.items.query(`SELECT c.id FROM c ORDER BY c.s${dir}`, opts);
        const ids = [];
        while (it.hasMoreResults()) {
          const { resources } = await it.fetchNext();
          ids.push(...(resources || []).map((r) => Number(r.id.slice(1))));
        }
        const want = [...Array(n).keys()].filter((i) => !opts.partitionKey || `p${i % 3}` === opts.partitionKey);
        if (dir) want.reverse();
        assert.equal(ids.length, count);
        assert.deepEqual(ids, want);
      }
    }
  });

  it("runs a parameterised filter", async () => {
    const { resources } = await container.items
      .query({
        query: "SELECT * FROM c WHERE c.n >= @lo AND c.kind = @kind",
        parameters: [
          { name: "@lo", value: 20 },
          { name: "@kind", value: "odd" },
        ],
      })
      .fetchAll();
    const want = items.filter((i) => i.n >= 20 && i.kind === "odd").map((i) => i.id).sort();
    assert.deepEqual(resources.map((r) => r.id).sort(), want);
  });

  it("pages with OFFSET and LIMIT without ORDER BY", async () => {
    // The client skips OFFSET rows of the merged ranges; the ranges must not.
    const { resources: all } = await container.items.query("SELECT VALUE c.id FROM c").fetchAll();
    const { resources: page } = await container.items.query("SELECT VALUE c.id FROM c OFFSET 5 LIMIT 7").fetchAll();
    // The SDK merges the ranges' pages in the order they come, which
    // need not be the full drain's when a range's rows take two pages:
    // seven rows, each once, each one of the container's.
    assert.equal(page.length, 7);
    assert.equal(new Set(page).size, 7);
    assert.ok(page.every((id) => all.includes(id)), `${page} within ${all}`);
    const { resources: tail } = await container.items.query("SELECT * FROM c OFFSET 27 LIMIT 10").fetchAll();
    assert.equal(tail.length, 3);
  });

  it("runs TOP and DISTINCT", async () => {
    const { resources: top } = await container.items.query("SELECT TOP 3 c.n FROM c ORDER BY c.n").fetchAll();
    assert.deepEqual(top.map((r) => r.n), [0, 1, 2]);
    const { resources: kinds } = await container.items
      .query("SELECT DISTINCT VALUE c.kind FROM c")
      .fetchAll();
    assert.deepEqual([...kinds].sort(), ["even", "odd"]);
    // Ordered by what it does not project, a DISTINCT's repeats need not
    // sort together: the plan tells the SDK to remember every row.
    const { resources: byN } = await container.items
      .query("SELECT DISTINCT VALUE c.kind FROM c ORDER BY c.n")
      .fetchAll();
    assert.deepEqual([...byN].sort(), ["even", "odd"]);
    // A DISTINCT no index orders, in pages of 2: the server keeps the rows
    // its pages returned, so each page reads on from where the last one
    // ended, and the pages together read each document about once.
    const query = "SELECT DISTINCT VALUE CONCAT(c.kind, '-', ToString(c.n % 7)) FROM c";
    const want = [...new Set(items.map((i) => `${i.kind}-${i.n % 7}`))].sort();
    const got = [];
    let retrieved = 0;
    let pages = 0;
    const pager = container.items.query(query, { maxItemCount: 2, populateQueryMetrics: true });
    while (pager.hasMoreResults()) {
      const page = await pager.fetchNext();
      // A page whose rows the SDK's DISTINCT dropped comes without any.
      got.push(...(page.resources ?? []));
      retrieved += Object.values(page.queryMetrics ?? {}).reduce((s, m) => s + m.retrievedDocumentCount, 0);
      pages++;
    }
    assert.deepEqual([...got].sort(), want);
    assert.ok(retrieved <= items.length + 2 * pages, `${pages} pages retrieved ${retrieved} documents of ${items.length}`);
  });
});
