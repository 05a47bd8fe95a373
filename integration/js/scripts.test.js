// Stored procedures through the JavaScript SDK's scripts API: create,
// read, replace, list, query and delete them; execute them in one logical
// partition, with parameters; a throw rolls back every write of the
// script; the budget idiom (a bulk import the client calls again until
// everything is in); console.log returned when asked for; a script that
// never ends is stopped and rolled back.
//
// Environment: see mayfly.js.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { randomUUID } from "node:crypto";
import { CosmosClient } from "@azure/cosmos";
import { endpoint, key, serverCertificate, statusOf } from "./mayfly.js";

describe("stored procedures", () => {
  const dbId = `js-scripts-${randomUUID()}`;
  let client;
  let database;
  let container;

  before(async () => {
    const agent = new https.Agent({ ca: await serverCertificate(), keepAlive: true });
    client = new CosmosClient({ endpoint, key, agent });
    ({ database } = await client.databases.create({ id: dbId }));
    ({ container } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } }));
  });

  after(async () => {
    if (database) {
      await database.delete();
    }
    client?.dispose();
  });

  it("manages stored procedures as resources", async () => {
    const sprocs = container.scripts.storedProcedures;
    const { resource: created, statusCode } = await sprocs.create({
      id: "hello",
      body: "function (name) { getContext().getResponse().setBody('hello ' + name); }",
    });
    assert.equal(statusCode, 201);
    for (const p of ["_rid", "_self", "_etag", "_ts"]) {
      assert.ok(created[p], `missing ${p}`);
    }
    assert.equal(await statusOf(sprocs.create({ id: "hello", body: "function () {}" })), 409, "a second create");
    // As the service does, a body that does not compile is kept, and fails when run.
    assert.equal(
      await statusOf(sprocs.create({ id: "broken", body: "function ( {" })),
      201,
      "a script that does not compile",
    );
    assert.equal(await statusOf(container.scripts.storedProcedure("broken").execute("p", [])), 400, "running it");
    assert.equal((await container.scripts.storedProcedure("broken").delete()).statusCode, 204);
    const { resource: read } = await container.scripts.storedProcedure("hello").read();
    assert.equal(read.body, created.body);
    const { resource: replaced } = await container.scripts.storedProcedure("hello").replace({
      id: "hello",
      body: "function (name) { getContext().getResponse().setBody('hi ' + name); }",
    });
    assert.notEqual(replaced._etag, created._etag);
    const { resources: all } = await sprocs.readAll().fetchAll();
    assert.deepEqual(all.map((s) => s.id), ["hello"]);
    const { resources: found } = await sprocs.query("SELECT * FROM root r WHERE r.id = 'hello'").fetchAll();
    assert.equal(found.length, 1);
    const { resource: answer } = await container.scripts.storedProcedure("hello").execute("p", ["you"]);
    assert.equal(answer, "hi you");
    assert.equal((await container.scripts.storedProcedure("hello").delete()).statusCode, 204);
    assert.equal(await statusOf(container.scripts.storedProcedure("hello").read()), 404);
  });

  it("runs in one transaction: a throw keeps none of its writes", async () => {
    await container.scripts.storedProcedures.create({
      id: "createThenThrow",
      body: `function (fail) {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), { id: "t1", pk: "p" });
        c.createDocument(c.getSelfLink(), { id: "t2", pk: "p" });
        if (fail) throw new Error("changed my mind");
        getContext().getResponse().setBody("kept");
      }`,
    });
    const sp = container.scripts.storedProcedure("createThenThrow");
    const err = await sp.execute("p", [true]).then(() => null, (e) => e);
    assert.equal(err?.code, 400);
    assert.match(err.message, /changed my mind/);
    assert.equal((await container.item("t1", "p").read()).statusCode, 404, "nothing of the failed run is kept");
    assert.equal((await sp.execute("p", [false])).resource, "kept");
    assert.equal((await container.item("t2", "p").read()).statusCode, 200);
  });

  it("keeps to one logical partition", async () => {
    await container.scripts.storedProcedures.create({
      id: "elsewhere",
      body: `function () {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), { id: "x", pk: "other" });
      }`,
    });
    const err = await container.scripts.storedProcedure("elsewhere").execute("p", []).then(() => null, (e) => e);
    assert.equal(err?.code, 400);
    assert.equal((await container.item("x", "other").read()).statusCode, 404);
  });

  it("imports in bulk, called again until the budget lets everything in", async () => {
    await container.scripts.storedProcedures.create({
      id: "bulkImport",
      body: `function (docs) {
        var c = getContext().getCollection(), count = 0;
        for (; count < docs.length; count++) {
          if (!c.createDocument(c.getSelfLink(), docs[count])) break;
        }
        getContext().getResponse().setBody(count);
      }`,
    });
    const docs = Array.from({ length: 2500 }, (_, i) => ({ id: `b${i}`, pk: "bulk", n: i }));
    let done = 0;
    let calls = 0;
    while (done < docs.length) {
      const { resource: n } = await container.scripts.storedProcedure("bulkImport").execute("bulk", [docs.slice(done)]);
      assert.ok(n > 0, "each call makes progress");
      done += n;
      calls++;
    }
    assert.ok(calls > 1, "the budget stopped the first call short");
    const { resources } = await container.items
      .query("SELECT VALUE COUNT(1) FROM c", { partitionKey: "bulk" })
      .fetchAll();
    assert.equal(resources[0], docs.length);
  });

  it("queries with parameters and reads documents inside the script", async () => {
    await container.scripts.storedProcedures.create({
      id: "sumOver",
      body: `function (min) {
        var c = getContext().getCollection();
        c.queryDocuments(c.getSelfLink(), { query: "SELECT VALUE r.n FROM r WHERE r.n >= @min", parameters: [{ name: "@min", value: min }] },
          { pageSize: -1 },
          function (err, values) {
            if (err) throw err;
            c.readDocument(c.getAltLink() + "/docs/b7", function (err, doc) {
              if (err) throw err;
              getContext().getResponse().setBody({ sum: values.reduce(function (a, b) { return a + b; }, 0), seven: doc.n });
            });
          });
      }`,
    });
    const { resource } = await container.scripts.storedProcedure("sumOver").execute("bulk", [2495]);
    assert.deepEqual(resource, { sum: 2495 + 2496 + 2497 + 2498 + 2499, seven: 7 });
  });

  it("calls user-defined functions in SELECT and WHERE, not in ORDER BY", async () => {
    await container.scripts.userDefinedFunctions.create({ id: "double", body: "function (x) { return x * 2; }" });
    await container.scripts.userDefinedFunctions.create({ id: "boom", body: "function (x) { throw new Error('no ' + x); }" });
    const { resources } = await container.items
      .query(
        "SELECT udf.double(c.n) AS d FROM c WHERE udf.double(c.n) > 4990 ORDER BY c.n DESC",
        { partitionKey: "bulk" },
      )
      .fetchAll();
    assert.deepEqual(resources, [{ d: 4998 }, { d: 4996 }, { d: 4994 }, { d: 4992 }]);
    // An ORDER BY item must be a document path, as the service requires.
    const unordered = await container.items
      .query("SELECT VALUE c.n FROM c ORDER BY udf.double(c.n)", { partitionKey: "bulk" })
      .fetchAll()
      .then(() => null, (e) => e);
    assert.equal(unordered?.code, 400);
    assert.match(unordered.message, /could not be mapped to a document path/);
    const err = await container.items
      .query("SELECT udf.boom(c.n) FROM c", { partitionKey: "bulk" })
      .fetchAll()
      .then(() => null, (e) => e);
    assert.equal(err?.code, 400);
    assert.match(err.message, /no 0|no \d+/);
    const missing = await container.items
      .query("SELECT udf.nothere(c.n) FROM c", { partitionKey: "bulk" })
      .fetchAll()
      .then(() => null, (e) => e);
    assert.equal(missing?.code, 400);
    // Replaced, the function answers anew.
    await container.scripts.userDefinedFunction("double").replace({ id: "double", body: "function (x) { return x * 3; }" });
    const { resources: tripled } = await container.items
      .query("SELECT VALUE udf.double(c.n) FROM c WHERE c.id = 'b10'", { partitionKey: "bulk" })
      .fetchAll();
    assert.deepEqual(tripled, [30]);
  });

  it("runs the pre- and post-triggers a write names, in its transaction", async () => {
    const triggers = container.scripts.triggers;
    await triggers.create({
      id: "stamp",
      triggerType: "Pre",
      triggerOperation: "All",
      body: `function () {
        var r = getContext().getRequest(), d = r.getBody();
        if (d.n < 0) throw new Error("n must not be negative");
        d.stamp = r.getOperationType();
        r.setBody(d);
      }`,
    });
    await triggers.create({
      id: "count",
      triggerType: "Post",
      triggerOperation: "Create",
      body: `function () {
        var c = getContext().getCollection(), d = getContext().getResponse().getBody();
        c.readDocument(c.getAltLink() + "/docs/summary", function (err, s) {
          if (err && err.number !== 404) throw err;
          s = s || { id: "summary", pk: d.pk, count: 0 };
          s.count++;
          c.upsertDocument(c.getSelfLink(), s);
        });
      }`,
    });
    assert.equal(
      await statusOf(triggers.create({ id: "bad", triggerType: "Sideways", triggerOperation: "All", body: "function () {}" })),
      400,
      "a trigger of no known type",
    );
    const opts = { preTriggerInclude: ["stamp"], postTriggerInclude: ["count"] };
    const { resource: a } = await container.items.create({ id: "ta", pk: "trig", n: 1 }, opts);
    assert.equal(a.stamp, "Create");
    await container.items.create({ id: "tb", pk: "trig", n: 2 }, opts);
    const { resource: summary } = await container.item("summary", "trig").read();
    assert.equal(summary.count, 2);
    // A pre-trigger that throws keeps nothing: not the item, not the count.
    const err = await container.items.create({ id: "tc", pk: "trig", n: -1 }, opts).then(() => null, (e) => e);
    assert.equal(err?.code, 400);
    assert.equal((await container.item("tc", "trig").read()).statusCode, 404);
    assert.equal((await container.item("summary", "trig").read()).resource.count, 2);
    // A trigger of the wrong type or operation is refused.
    const wrongType = await container.items.create({ id: "td", pk: "trig", n: 3 }, { preTriggerInclude: ["count"] }).then(() => null, (e) => e);
    assert.equal(wrongType?.code, 400);
    const wrongOp = await container.item("ta", "trig").replace({ id: "ta", pk: "trig", n: 5 }, { postTriggerInclude: ["count"] }).then(() => null, (e) => e);
    assert.equal(wrongOp?.code, 400);
    const { resource: replaced } = await container.item("ta", "trig").replace({ id: "ta", pk: "trig", n: 5 }, { preTriggerInclude: ["stamp"] });
    assert.equal(replaced.stamp, "Replace");
  });

  it("returns console.log when logging is asked for", async () => {
    await container.scripts.storedProcedures.create({
      id: "logs",
      body: "function () { console.log('step', 1); getContext().getResponse().setBody(true); }",
    });
    const res = await container.scripts.storedProcedure("logs").execute("p", [], { enableScriptLogging: true });
    assert.equal(decodeURIComponent(res.headers["x-ms-documentdb-script-log-results"]), "step 1");
  });

  it("stops a script that never ends and keeps none of its writes", async () => {
    await container.scripts.storedProcedures.create({
      id: "forever",
      body: `function () {
        var c = getContext().getCollection();
        c.createDocument(c.getSelfLink(), { id: "loop", pk: "p" });
        for (;;) {}
      }`,
    });
    const err = await container.scripts.storedProcedure("forever").execute("p", []).then(() => null, (e) => e);
    assert.ok(err, "the call fails");
    assert.equal((await container.item("loop", "p").read()).statusCode, 404);
    // The server still answers.
    assert.equal((await container.item("t2", "p").read()).statusCode, 200);
  });
});
