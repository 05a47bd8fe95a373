// The DocumentDB-era JavaScript SDK (the `documentdb` package, 1.15.x:
// DocumentClient, callbacks, API version 2017-11-15) against a running
// Mayfly, used as applications of its era used it: resources addressed by
// the _self links they return as much as by name, cross-partition queries
// that learn their plan from the gateway's 400/1004 refusal, change feed
// through readDocuments, stored procedures, triggers and functions by
// _self, users and permissions on _self links with resource tokens,
// attachments, offers, and a collection without a partition key. The SDK
// parses the rid of every link it sends and throws, uncaught, on one that
// is not of the service's shape, and reads session tokens in the simple
// form of its API version: either would end the test process.
//
// The SDK pins TLS 1.0 (secureProtocol "TLSv1_client_method" on every
// request), which neither Node's OpenSSL 3 at its default security level
// nor Mayfly (at least TLS 1.2, as the service now requires) accepts; the
// agent given to it drops the pin and trusts the server's certificate.
//
// Environment: see mayfly.js.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { randomUUID } from "node:crypto";
import documentdb from "documentdb";
import { endpoint, key, serverCertificate } from "./mayfly.js";

const { DocumentClient } = documentdb;

class Agent extends https.Agent {
  createConnection(options, callback) {
    const { secureProtocol, ...rest } = options;
    return super.createConnection(rest, callback);
  }
}

// call runs a DocumentClient method and resolves with its resource and
// response headers, or rejects with the error it reports ({code, body}).
function call(client, method, ...args) {
  return new Promise((resolve, reject) =>
    client[method](...args, (err, resource, headers) =>
      err ? reject(Object.assign(new Error(`${method}: ${err.code} ${err.body ?? err.message}`), err)) : resolve({ resource, headers }),
    ),
  );
}

function all(iterator) {
  return new Promise((resolve, reject) =>
    iterator.toArray((err, resources) => (err ? reject(Object.assign(new Error(`${err.code} ${err.body}`), err)) : resolve(resources))),
  );
}

function page(iterator) {
  return new Promise((resolve, reject) =>
    iterator.executeNext((err, resources, headers) =>
      err ? reject(Object.assign(new Error(`${err.code} ${err.body}`), err)) : resolve({ resources, headers }),
    ),
  );
}

async function codeOf(promise) {
  try {
    await promise;
    return 0;
  } catch (err) {
    if (typeof err.code === "number") return err.code;
    throw err;
  }
}

describe("documentdb 1.15 (DocumentDB-era SDK)", () => {
  const dbId = `js-documentdb-${randomUUID()}`;
  let ca;
  const agents = [];
  let client;
  let db;
  let coll; // partitioned on /pk
  const docs = {};

  function newClient(auth) {
    const c = new DocumentClient(endpoint, auth);
    const agent = new Agent({ ca, keepAlive: true });
    agents.push(agent);
    c.requestAgent = agent;
    return c;
  }

  before(async () => {
    ca = await serverCertificate();
    client = newClient({ masterKey: key });
    db = (await call(client, "createDatabase", { id: dbId })).resource;
    coll = (
      await call(client, "createCollection", db._self, { id: "p", partitionKey: { paths: ["/pk"], kind: "Hash" } }, { offerThroughput: 400 })
    ).resource;
    for (let i = 0; i < 10; i++) {
      const doc = { id: `d${i}`, pk: i % 2 ? "odd" : "even", n: i, s: `s${i % 3}` };
      docs[doc.id] = (await call(client, "createDocument", coll._self, doc)).resource;
    }
  });

  after(async () => {
    if (db) {
      await call(client, "deleteDatabase", db._self);
    }
    for (const a of agents) a.destroy();
  });

  it("reads databases and collections by _self and by name", async () => {
    assert.match(db._self, /^dbs\/[^/]+\/$/);
    assert.equal((await call(client, "readDatabase", db._self)).resource.id, dbId);
    assert.equal((await call(client, "readDatabase", `dbs/${dbId}`)).resource._rid, db._rid);
    assert.equal(await codeOf(call(client, "createDatabase", { id: dbId })), 409);
    const found = await all(client.queryDatabases({ query: "SELECT * FROM root r WHERE r.id = @id", parameters: [{ name: "@id", value: dbId }] }));
    assert.deepEqual(found.map((d) => d._self), [db._self]);

    const read = (await call(client, "readCollection", coll._self)).resource;
    assert.deepEqual(read.partitionKey.paths, ["/pk"]);
    assert.equal(read._self, coll._self);
    assert.equal((await call(client, "readCollection", `dbs/${dbId}/colls/p`)).resource._rid, coll._rid);
    const ids = (await all(client.readCollections(db._self))).map((c) => c.id);
    assert.ok(ids.includes("p"), `collections ${ids}`);
  });

  it("creates, reads, replaces, upserts and deletes documents by _self and by name", async () => {
    const a = (await call(client, "createDocument", coll._self, { id: "a", pk: "x", v: 1 })).resource;
    assert.equal(a._self, `${coll._self}docs/${a._rid}/`);
    assert.equal((await call(client, "readDocument", a._self, { partitionKey: "x" })).resource.v, 1);
    assert.equal((await call(client, "readDocument", `dbs/${dbId}/colls/p/docs/a`, { partitionKey: "x" })).resource._rid, a._rid);
    assert.equal(await codeOf(call(client, "readDocument", `dbs/${dbId}/colls/p/docs/none`, { partitionKey: "x" })), 404);

    const replaced = (await call(client, "replaceDocument", a._self, { id: "a", pk: "x", v: 2 }, { partitionKey: "x" })).resource;
    assert.equal(replaced.v, 2);
    assert.notEqual(replaced._etag, a._etag);
    const stale = { partitionKey: "x", accessCondition: { type: "IfMatch", condition: a._etag } };
    assert.equal(await codeOf(call(client, "replaceDocument", a._self, { id: "a", pk: "x", v: 3 }, stale)), 412);

    assert.equal((await call(client, "upsertDocument", coll._self, { id: "a", pk: "x", v: 4 })).resource.v, 4);
    assert.equal((await call(client, "upsertDocument", `dbs/${dbId}/colls/p`, { id: "b", pk: "x", v: 5 })).resource.v, 5);
    assert.equal(await codeOf(call(client, "createDocument", coll._self, { id: "b", pk: "x" })), 409);

    await call(client, "deleteDocument", a._self, { partitionKey: "x" });
    await call(client, "deleteDocument", `dbs/${dbId}/colls/p/docs/b`, { partitionKey: "x" });
    assert.equal(await codeOf(call(client, "readDocument", a._self, { partitionKey: "x" })), 404);
  });

  it("pages a read feed with continuations", async () => {
    const iterator = client.readDocuments(coll._self, { maxItemCount: 3 });
    const seen = [];
    let pages = 0;
    for (;;) {
      const { resources } = await page(iterator);
      if (!resources) break;
      pages++;
      seen.push(...resources.map((d) => d.id));
      if (!iterator.hasMoreResults()) break;
    }
    assert.deepEqual(seen.sort(), Object.keys(docs).sort());
    assert.ok(pages >= 4, `${pages} pages of at most 3`);
    const even = await all(client.readDocuments(coll._self, { partitionKey: "even" }));
    assert.deepEqual(even.map((d) => d.n).sort((x, y) => x - y), [0, 2, 4, 6, 8]);
  });

  it("queries one partition with parameters", async () => {
    const spec = { query: "SELECT VALUE c.n FROM c WHERE c.n > @n", parameters: [{ name: "@n", value: 4 }] };
    const got = await all(client.queryDocuments(coll._self, spec, { partitionKey: "odd" }));
    assert.deepEqual(got.sort((x, y) => x - y), [5, 7, 9]);
  });

  it("refuses a cross-partition query without enableCrossPartitionQuery", async () => {
    assert.equal(await codeOf(all(client.queryDocuments(coll._self, "SELECT * FROM c"))), 400);
  });

  it("runs cross-partition queries the SDK plans from the gateway's refusal", async () => {
    const cross = { enableCrossPartitionQuery: true };
    const q = (text, options = {}) => all(client.queryDocuments(coll._self, text, { ...cross, ...options }));
    assert.equal((await q("SELECT * FROM c", { maxItemCount: 2 })).length, 10);
    assert.deepEqual(await q("SELECT VALUE c.n FROM c ORDER BY c.n DESC", { maxItemCount: 3 }), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    assert.deepEqual(await q("SELECT TOP 3 VALUE c.n FROM c ORDER BY c.n"), [0, 1, 2]);
    assert.deepEqual(await q("SELECT VALUE COUNT(1) FROM c"), [10]);
    assert.deepEqual(await q("SELECT VALUE SUM(c.n) FROM c"), [45]);
    assert.deepEqual(await q("SELECT VALUE AVG(c.n) FROM c"), [4.5]);
    // The SDK merges MIN and MAX as the bare values of each range. (Its
    // MinAggregator takes an empty range's undefined for a minimum, as it
    // did against the service, so MIN is asked of one partition here.)
    assert.deepEqual(await q("SELECT VALUE MAX(c.n) FROM c"), [9]);
    assert.deepEqual(await q("SELECT VALUE MAX(c.s) FROM c"), ["s2"]);
    assert.deepEqual(await q("SELECT VALUE MIN(c.s) FROM c", { partitionKey: "odd", enableCrossPartitionQuery: false }), ["s0"]);
    assert.deepEqual(await q(`SELECT VALUE COUNT(1) FROM c WHERE c.s = "s1"`), [3]);
    assert.equal((await all(client.queryDocuments(`dbs/${dbId}/colls/p`, "SELECT * FROM c", cross))).length, 10);
  });

  it("merges ORDER BY, TOP and aggregates over data spread across ranges", async () => {
    // Every key of a version 1 definition (all the era knew) lands in one
    // range of Mayfly's (README, "Several partition key ranges"), so this
    // collection, which the SDK treats no differently, hashes with version
    // 2 to spread twelve keys over the ranges of a server of several.
    const spread = (await call(client, "createCollection", db._self, { id: "spread", partitionKey: { paths: ["/pk"], kind: "Hash", version: 2 } })).resource;
    for (let i = 0; i < 12; i++) {
      await call(client, "createDocument", spread._self, { id: `s${i}`, pk: `k${i}`, n: i + 1, s: `v${i % 5}` });
    }
    const ranges = await all(client.readPartitionKeyRanges(spread._self));
    for (const r of ranges) {
      const inRange = await all(client.queryDocuments(spread._self, "SELECT VALUE c.id FROM c", { initialHeaders: { "x-ms-documentdb-partitionkeyrangeid": r.id } }));
      assert.ok(inRange.length > 0, `range ${r.id} holds some of the keys`);
    }
    const q = (text, options = {}) => all(client.queryDocuments(spread._self, text, { enableCrossPartitionQuery: true, ...options }));
    assert.deepEqual(await q("SELECT VALUE c.n FROM c ORDER BY c.n DESC", { maxItemCount: 5 }), [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
    assert.deepEqual(await q("SELECT TOP 4 VALUE c.n FROM c ORDER BY c.n"), [1, 2, 3, 4]);
    assert.deepEqual(await q("SELECT VALUE COUNT(1) FROM c"), [12]);
    assert.deepEqual(await q("SELECT VALUE SUM(c.n) FROM c"), [78]);
    assert.deepEqual(await q("SELECT VALUE AVG(c.n) FROM c"), [6.5]);
    assert.deepEqual(await q("SELECT VALUE MAX(c.n) FROM c"), [12]);
    assert.deepEqual(await q("SELECT VALUE MIN(c.n) FROM c"), [1]);
    assert.deepEqual(await q("SELECT VALUE MIN(c.s) FROM c WHERE c.n > 3"), ["v0"]);
    await call(client, "deleteCollection", spread._self);
  });

  it("lists partition key ranges that cover the key space", async () => {
    const ranges = await all(client.readPartitionKeyRanges(coll._self));
    assert.ok(ranges.length >= 1);
    assert.equal(ranges[0].minInclusive, "");
    assert.equal(ranges.at(-1).maxExclusive, "FF");
    for (let i = 1; i < ranges.length; i++) assert.equal(ranges[i].minInclusive, ranges[i - 1].maxExclusive);
  });

  it("reads the change feed of each partition key, then only what changed", async () => {
    // readDocuments sends no range id (options.partitionKeyRangeId is
    // the parallel query's, not the feed's): the era's change feed is read
    // per partition key, continued with the etag as If-None-Match.
    const etags = {};
    const seen = [];
    for (const pk of ["even", "odd"]) {
      const { resources, headers } = await page(client.readDocuments(coll._self, { a_im: "Incremental feed", partitionKey: pk, maxItemCount: 100 }));
      seen.push(...resources.map((d) => d.id));
      etags[pk] = headers.etag;
      assert.ok(etags[pk], "the feed's etag");
    }
    assert.deepEqual(seen.sort(), Object.keys(docs).sort());

    await call(client, "replaceDocument", docs.d3._self, { ...docs.d3, n: 30 }, { partitionKey: "odd" });
    const changed = [];
    for (const pk of ["even", "odd"]) {
      const options = { a_im: "Incremental feed", partitionKey: pk, accessCondition: { type: "IfNoneMatch", condition: etags[pk] } };
      const { resources } = await page(client.readDocuments(coll._self, options));
      changed.push(...(resources ?? []).map((d) => [d.id, d.n]));
    }
    assert.deepEqual(changed, [["d3", 30]]);
    await call(client, "replaceDocument", docs.d3._self, docs.d3, { partitionKey: "odd" });
  });

  it("serves a collection without a partition key", async () => {
    const np = (await call(client, "createCollection", db._self, { id: "np" })).resource;
    assert.equal(np.partitionKey, undefined);
    const d = (await call(client, "createDocument", np._self, { id: "n1", v: 1 })).resource;
    await call(client, "createDocument", np._self, { id: "n2", v: 2 });
    assert.equal((await call(client, "readDocument", d._self)).resource.v, 1);
    assert.equal((await call(client, "replaceDocument", d._self, { id: "n1", v: 3 })).resource.v, 3);
    assert.deepEqual(await all(client.queryDocuments(np._self, "SELECT VALUE c.v FROM c ORDER BY c.v DESC")), [3, 2]);
    assert.deepEqual(await all(client.queryDocuments(np._self, "SELECT VALUE COUNT(1) FROM c")), [2]);
    await call(client, "deleteDocument", d._self);
    assert.equal((await all(client.readDocuments(np._self))).length, 1);
    await call(client, "deleteCollection", np._self);
  });

  it("manages and runs stored procedures, triggers and functions by _self", async () => {
    const sproc = (
      await call(client, "createStoredProcedure", coll._self, {
        id: "make",
        body: `function (id) {
          var c = getContext().getCollection();
          var ok = c.createDocument(c.getSelfLink(), { id: id, pk: "even", made: true }, function (err, doc) {
            if (err) throw err;
            getContext().getResponse().setBody(doc.id);
          });
          if (!ok) throw new Error("not accepted");
        }`,
      })
    ).resource;
    assert.equal(sproc._self, `${coll._self}sprocs/${sproc._rid}/`);
    assert.equal((await call(client, "readStoredProcedure", sproc._self)).resource.id, "make");
    assert.equal((await call(client, "executeStoredProcedure", sproc._self, ["made1"], { partitionKey: "even" })).resource, "made1");
    assert.equal((await call(client, "readDocument", `dbs/${dbId}/colls/p/docs/made1`, { partitionKey: "even" })).resource.made, true);
    const replaced = (await call(client, "replaceStoredProcedure", sproc._self, { id: "make", body: "function (a) { getContext().getResponse().setBody(a * 2); }" })).resource;
    assert.equal(replaced._rid, sproc._rid);
    assert.equal((await call(client, "executeStoredProcedure", sproc._self, [21], { partitionKey: "even" })).resource, 42);
    assert.deepEqual((await all(client.readStoredProcedures(coll._self))).map((s) => s.id), ["make"]);
    await call(client, "deleteStoredProcedure", sproc._self);
    assert.equal(await codeOf(call(client, "readStoredProcedure", sproc._self)), 404);
    await call(client, "deleteDocument", `dbs/${dbId}/colls/p/docs/made1`, { partitionKey: "even" });

    const trigger = (
      await call(client, "createTrigger", coll._self, {
        id: "stamp",
        triggerType: "Pre",
        triggerOperation: "Create",
        body: "function () { var r = getContext().getRequest(); var d = r.getBody(); d.stamped = true; r.setBody(d); }",
      })
    ).resource;
    const stamped = (await call(client, "createDocument", coll._self, { id: "t1", pk: "even" }, { preTriggerInclude: "stamp" })).resource;
    assert.equal(stamped.stamped, true);
    await call(client, "deleteDocument", stamped._self, { partitionKey: "even" });
    await call(client, "replaceTrigger", trigger._self, { ...trigger, triggerOperation: "All" });
    await call(client, "deleteTrigger", trigger._self);

    const udf = (await call(client, "createUserDefinedFunction", coll._self, { id: "twice", body: "function (x) { return x * 2; }" })).resource;
    const twice = await all(client.queryDocuments(coll._self, "SELECT VALUE udf.twice(c.n) FROM c WHERE c.id = 'd4'", { partitionKey: "even" }));
    assert.deepEqual(twice, [8]);
    await call(client, "deleteUserDefinedFunction", udf._self);
    assert.deepEqual(await all(client.readUserDefinedFunctions(coll._self)), []);
  });

  it("grants a user a collection by its _self link, through resource tokens", async () => {
    const user = (await call(client, "createUser", db._self, { id: "reader" })).resource;
    assert.equal(user._self, `${db._self}users/${user._rid}/`);
    const perm = (await call(client, "createPermission", user._self, { id: "read-p", permissionMode: "Read", resource: coll._self })).resource;
    assert.equal(perm.resource.replace(/\/$/, ""), coll._self.replace(/\/$/, ""));
    assert.ok(perm._token, "a resource token");
    assert.deepEqual((await all(client.readPermissions(user._self))).map((p) => p.id), ["read-p"]);

    // permissionFeed files the token under the rid its resource names,
    // which the SDK finds for requests by _self.
    const byFeed = newClient({ permissionFeed: [perm] });
    assert.equal((await call(byFeed, "readDocument", docs.d4._self, { partitionKey: "even" })).resource.n, 4);
    const odd = await all(byFeed.queryDocuments(coll._self, "SELECT VALUE c.n FROM c", { partitionKey: "odd" }));
    assert.deepEqual(odd.sort((x, y) => x - y), [1, 3, 5, 7, 9]);
    assert.equal(await codeOf(call(byFeed, "deleteDocument", docs.d4._self, { partitionKey: "even" })), 403);
    // resourceTokens keyed by the collection's id serve requests by name.
    const byName = newClient({ resourceTokens: { p: perm._token } });
    assert.equal((await call(byName, "readDocument", `dbs/${dbId}/colls/p/docs/d4`, { partitionKey: "even" })).resource._rid, docs.d4._rid);

    await call(client, "replacePermission", perm._self, { id: "read-p", permissionMode: "All", resource: coll._self });
    assert.equal((await call(client, "readPermission", perm._self)).resource.permissionMode, "All");
    await call(client, "deletePermission", perm._self);
    assert.equal((await call(client, "replaceUser", user._self, { id: "renamed" })).resource._rid, user._rid);
    await call(client, "deleteUser", user._self);
    assert.deepEqual(await all(client.readUsers(db._self)), []);
  });

  it("keeps attachment metadata on a document, addressed by _self", async () => {
    const doc = docs.d6;
    const att = (await call(client, "createAttachment", doc._self, { id: "pic", contentType: "image/png", media: "https://example.com/pic.png" }, { partitionKey: "even" })).resource;
    assert.equal(att._self, `${doc._self}attachments/${att._rid}/`);
    assert.equal((await call(client, "readAttachment", att._self, { partitionKey: "even" })).resource.media, "https://example.com/pic.png");
    const replaced = (await call(client, "replaceAttachment", att._self, { id: "pic", contentType: "image/jpeg", media: "https://example.com/pic.jpg" }, { partitionKey: "even" })).resource;
    assert.equal(replaced.contentType, "image/jpeg");
    assert.deepEqual((await all(client.readAttachments(doc._self, { partitionKey: "even" }))).map((a) => a.id), ["pic"]);
    // Uploading media itself is refused (README, "Attachments").
    assert.equal(await codeOf(call(client, "createAttachmentAndUploadMedia", doc._self, Buffer.from("bytes"), { partitionKey: "even", slug: "raw", contentType: "text/plain" })), 400);
    await call(client, "deleteAttachment", att._self, { partitionKey: "even" });
    assert.deepEqual(await all(client.readAttachments(doc._self, { partitionKey: "even" })), []);
  });

  it("reads and replaces the collection's offer", async () => {
    const offers = await all(client.queryOffers({ query: "SELECT * FROM root r WHERE r.offerResourceId = @rid", parameters: [{ name: "@rid", value: coll._rid }] }));
    assert.equal(offers.length, 1);
    const offer = offers[0];
    assert.equal(offer.content.offerThroughput, 400);
    assert.ok((await all(client.readOffers())).some((o) => o.id === offer.id));
    const replaced = (await call(client, "replaceOffer", offer._self, { ...offer, content: { ...offer.content, offerThroughput: 1000 } })).resource;
    assert.equal(replaced.content.offerThroughput, 1000);
    assert.equal((await call(client, "readOffer", offer._self)).resource.content.offerThroughput, 1000);
  });

  it("replaces the collection's default TTL and lists no conflicts", async () => {
    const read = (await call(client, "readCollection", coll._self)).resource;
    const replaced = (await call(client, "replaceCollection", coll._self, { id: "p", partitionKey: read.partitionKey, indexingPolicy: read.indexingPolicy, defaultTtl: 3600 })).resource;
    assert.equal(replaced.defaultTtl, 3600);
    const short = (await call(client, "createDocument", coll._self, { id: "ttl", pk: "even", ttl: 1 })).resource;
    assert.equal(short.ttl, 1);
    let status = 0;
    for (let i = 0; i < 30 && status !== 404; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      status = await codeOf(call(client, "readDocument", short._self, { partitionKey: "even" }));
    }
    assert.equal(status, 404, "the document expired");
    assert.deepEqual(await all(client.readConflicts(coll._self)), []);
  });
});
