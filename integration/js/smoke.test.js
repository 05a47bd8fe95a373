// A smoke test of the official JavaScript SDK against a running Mayfly:
// database and container create, then the item life cycle and a read feed,
// checking statuses and bodies as the SDK reports them.
//
// Environment: see mayfly.js.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { randomUUID } from "node:crypto";
import { CosmosClient } from "@azure/cosmos";
import { endpoint, key, serverCertificate, statusOf } from "./mayfly.js";

function assertSystemProperties(resource) {
  for (const p of ["id", "_rid", "_self", "_etag", "_ts"]) {
    assert.ok(resource[p] !== undefined && resource[p] !== "", `missing ${p} in ${JSON.stringify(resource)}`);
  }
  assert.equal(typeof resource._ts, "number", "_ts is a number");
  assert.match(resource._etag, /^".*"$/, "_etag is quoted");
}

describe("JavaScript SDK against Mayfly", () => {
  const dbId = `js-smoke-${randomUUID()}`;
  let client;
  let database;
  let container;

  before(async () => {
    const agent = new https.Agent({ ca: await serverCertificate(), keepAlive: true });
    client = new CosmosClient({ endpoint, key, agent });
  });

  after(async () => {
    if (database) {
      assert.equal(await statusOf(database.delete()), 204, "database delete");
    }
    client?.dispose();
  });

  it("creates a database", async () => {
    const res = await client.databases.create({ id: dbId });
    assert.equal(res.statusCode, 201);
    assert.equal(res.resource.id, dbId);
    assertSystemProperties(res.resource);
    database = res.database;

    const read = await database.read();
    assert.equal(read.statusCode, 200);
    assert.equal(read.resource._rid, res.resource._rid);

    assert.equal(await statusOf(client.databases.create({ id: dbId })), 409, "duplicate database");
  });

  it("creates a container partitioned on /pk", async (t) => {
    if (!database) return t.skip("no database");
    const res = await database.containers.create({ id: "items", partitionKey: { paths: ["/pk"] } });
    assert.equal(res.statusCode, 201);
    assert.equal(res.resource.id, "items");
    assert.deepEqual(res.resource.partitionKey.paths, ["/pk"]);
    assertSystemProperties(res.resource);
    container = res.container;

    const read = await container.read();
    assert.equal(read.statusCode, 200);
    assert.deepEqual(read.resource.partitionKey.paths, ["/pk"]);
  });

  it("round-trips Mayfly's erasure setting on a container untouched", async (t) => {
    if (!database) return t.skip("no database");
    const erasure = { deadlineSeconds: 600, onDelete: true };
    const res = await database.containers.create({ id: "erased", partitionKey: { paths: ["/pk"] }, mayflyErasure: erasure });
    assert.equal(res.statusCode, 201);
    assert.deepEqual(res.resource.mayflyErasure, erasure);
    const read = await res.container.read();
    assert.deepEqual(read.resource.mayflyErasure, erasure);
    // A read, changed and replaced definition keeps it.
    const replaced = await res.container.replace({ ...read.resource, defaultTtl: 60 });
    assert.equal(replaced.statusCode, 200);
    assert.deepEqual(replaced.resource.mayflyErasure, erasure);
    assert.equal(replaced.resource.defaultTtl, 60);
    // A replace that does not mention it keeps it too (SDKs that know only
    // the service's properties drop what they do not know).
    const { mayflyErasure, ...without } = replaced.resource;
    const again = await res.container.replace({ ...without, defaultTtl: 120 });
    assert.deepEqual(again.resource.mayflyErasure, erasure);
    assert.equal(
      await statusOf(database.containers.create({ id: "bad", partitionKey: { paths: ["/pk"] }, mayflyErasure: { deadlineSeconds: 1 } })),
      400,
      "a deadline under ten seconds",
    );
    assert.equal(await statusOf(res.container.delete()), 204);
  });

  it("creates, reads, replaces, upserts and deletes items", async (t) => {
    if (!container) return t.skip("no container");
    const doc = { id: "item-1", pk: "tenant-a", n: 1, tags: ["x", "y"], nested: { ok: true } };

    const created = await container.items.create(doc);
    assert.equal(created.statusCode, 201, "create");
    assert.equal(created.resource.id, doc.id);
    assert.equal(created.resource.pk, doc.pk);
    assert.deepEqual(created.resource.tags, doc.tags);
    assertSystemProperties(created.resource);
    assert.equal(created.etag, created.resource._etag, "etag header matches _etag");

    assert.equal(await statusOf(container.items.create(doc)), 409, "duplicate id in the same partition");

    const read = await container.item(doc.id, doc.pk).read();
    assert.equal(read.statusCode, 200, "read");
    assert.deepEqual(
      { id: read.resource.id, pk: read.resource.pk, n: read.resource.n, tags: read.resource.tags, nested: read.resource.nested },
      doc,
    );
    assert.equal(read.resource._etag, created.resource._etag);

    const replaced = await container.item(doc.id, doc.pk).replace({ ...doc, n: 2 });
    assert.equal(replaced.statusCode, 200, "replace");
    assert.equal(replaced.resource.n, 2);
    assert.notEqual(replaced.resource._etag, created.resource._etag, "replace changes the etag");

    const stale = container.item(doc.id, doc.pk).replace(
      { ...doc, n: 3 },
      { accessCondition: { type: "IfMatch", condition: created.resource._etag } },
    );
    assert.equal(await statusOf(stale), 412, "replace with a stale etag");

    const up1 = await container.items.upsert({ id: "item-2", pk: "tenant-b", v: "first" });
    assert.equal(up1.statusCode, 201, "upsert that creates");
    assert.equal(up1.resource.v, "first");
    const up2 = await container.items.upsert({ id: "item-2", pk: "tenant-b", v: "second" });
    assert.equal(up2.statusCode, 200, "upsert that replaces");
    assert.equal(up2.resource.v, "second");

    const again = await container.item("item-2", "tenant-b").read();
    assert.equal(again.resource.v, "second");

    // The same id under another partition key is a different item.
    assert.equal(await statusOf(container.item("item-2", "tenant-a").read()), 404, "id under another key");

    const feed = await container.items.readAll().fetchAll();
    const byId = Object.fromEntries(feed.resources.map((r) => [r.id, r]));
    assert.deepEqual(Object.keys(byId).sort(), ["item-1", "item-2"], "read feed");
    assert.equal(byId["item-1"].n, 2);
    assert.equal(byId["item-2"].v, "second");
    for (const r of feed.resources) assertSystemProperties(r);

    const deleted = await container.item(doc.id, doc.pk).delete();
    assert.equal(deleted.statusCode, 204, "delete");
    assert.equal(await statusOf(container.item(doc.id, doc.pk).read()), 404, "read after delete");
    assert.equal(await statusOf(container.item(doc.id, doc.pk).delete()), 404, "delete twice");

    const rest = await container.items.readAll().fetchAll();
    assert.deepEqual(rest.resources.map((r) => r.id), ["item-2"], "read feed after delete");
  });

  it("relaxes the consistency of a request, never strengthens it", async (t) => {
    if (!container) return t.skip("no container");
    await container.items.upsert({ id: "levels", pk: "tenant-c" });
    const levels = ["Eventual", "ConsistentPrefix", "Session", "BoundedStaleness", "Strong"];
    const { resource: account } = await client.getDatabaseAccount();
    const accountLevel = levels.indexOf(account.consistencyPolicy);
    assert.ok(accountLevel >= 0, `account level ${account.consistencyPolicy}`);
    for (const [i, consistencyLevel] of levels.entries()) {
      const status = await statusOf(container.item("levels", "tenant-c").read({ consistencyLevel }));
      assert.equal(status, i <= accountLevel ? 200 : 400, `a read at ${consistencyLevel} on a ${account.consistencyPolicy} account`);
    }
  });

  it("deletes every item of a partition key", async (t) => {
    if (!container) return t.skip("no container");
    for (let i = 0; i < 230; i++) await container.items.create({ id: `gone-${i}`, pk: "tenant-gone" });
    await container.items.create({ id: "stays", pk: "tenant-kept" });
    const res = await container.deleteAllItemsForPartitionKey("tenant-gone");
    assert.equal(res.statusCode, 200);
    const { resources: left } = await container.items
      .query("SELECT VALUE COUNT(1) FROM c", { partitionKey: "tenant-gone" })
      .fetchAll();
    assert.deepEqual(left, [0]);
    assert.equal((await container.item("stays", "tenant-kept").read()).statusCode, 200);
    assert.equal((await container.deleteAllItemsForPartitionKey("tenant-none")).statusCode, 200);
  });
});
