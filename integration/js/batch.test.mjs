// Transactional batch, bulk and patch through the official JavaScript SDK
// against a running Mayfly. Environment as for smoke.test.js:
//   MAYFLY_ENDPOINT  default https://localhost:8081/
//   MAYFLY_KEY       default the well-known emulator key
//   MAYFLY_CA_FILE   the server's certificate in PEM; when unset it is
//                    fetched, unverified, from /_explorer/emulator.pem.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { randomUUID } from "node:crypto";
import { CosmosClient } from "@azure/cosmos";
import { endpoint, key, serverCertificate, statusOf } from "./mayfly.js";

const statuses = (results) => results.map((r) => r.statusCode);

describe("JavaScript SDK batch, bulk and patch against Mayfly", () => {
  const dbId = `js-batch-${randomUUID()}`;
  let client;
  let database;
  let container;

  before(async () => {
    const agent = new https.Agent({ ca: await serverCertificate(), keepAlive: true });
    client = new CosmosClient({ endpoint, key, agent });
    ({ database } = await client.databases.create({ id: dbId }));
    ({ container } = await database.containers.create({ id: "items", partitionKey: { paths: ["/pk"] } }));
  });

  after(async () => {
    if (database) {
      assert.equal(await statusOf(database.delete()), 204, "database delete");
    }
    client?.dispose();
  });

  it("runs a transactional batch", async () => {
    await container.items.create({ id: "r1", pk: "a", n: 1 });
    const res = await container.items.batch(
      [
        { operationType: "Create", resourceBody: { id: "b1", pk: "a", n: 1 } },
        { operationType: "Upsert", resourceBody: { id: "b2", pk: "a", n: 2 } },
        { operationType: "Upsert", resourceBody: { id: "r1", pk: "a", n: 5 } },
        { operationType: "Read", id: "b1" },
        { operationType: "Replace", id: "b2", resourceBody: { id: "b2", pk: "a", n: 20 } },
        {
          operationType: "Patch",
          id: "b1",
          resourceBody: { operations: [{ op: "incr", path: "/n", value: 10 }] },
        },
        { operationType: "Patch", id: "r1", resourceBody: [{ op: "add", path: "/tag", value: "x" }] },
        { operationType: "Delete", id: "b2" },
      ],
      "a",
    );
    assert.equal(res.code, 200);
    assert.deepEqual(statuses(res.result), [201, 201, 200, 200, 200, 200, 200, 204]);
    for (const [i, r] of res.result.entries()) {
      assert.ok(r.requestCharge > 0, `operation ${i} charge`);
      if (i !== 7) assert.match(r.eTag, /^".*"$/, `operation ${i} etag`);
    }
    assert.equal(res.result[3].resourceBody.n, 1, "the read sees the create before it");
    assert.equal(res.result[5].resourceBody.n, 11, "the patched item");
    assert.equal(res.result[7].resourceBody, undefined, "a delete has no body");

    const { resource } = await container.item("r1", "a").read();
    assert.equal(resource.n, 5);
    assert.equal(resource.tag, "x");
    assert.equal(resource._etag, res.result[6].eTag);
    assert.equal(await statusOf(container.item("b2", "a").read()), 404);
  });

  it("rolls a failing batch back", async () => {
    const res = await container.items.batch(
      [
        { operationType: "Create", resourceBody: { id: "gone", pk: "a" } },
        { operationType: "Delete", id: "r1" },
        { operationType: "Create", resourceBody: { id: "b1", pk: "a" } },
      ],
      "a",
    );
    assert.equal(res.code, 207);
    assert.deepEqual(statuses(res.result), [424, 424, 409]);
    assert.equal(await statusOf(container.item("gone", "a").read()), 404, "the create was rolled back");
    assert.equal(await statusOf(container.item("r1", "a").read()), 200, "the delete was rolled back");
  });

  it("answers a read at the current etag 304, and such a batch 207, yet commits it", async () => {
    const { etag } = await container.items.create({ id: "cached", pk: "a", n: 1 });
    const res = await container.items.batch(
      [
        { operationType: "Read", id: "cached", ifNoneMatch: etag },
        { operationType: "Read", id: "cached", ifMatch: etag },
        { operationType: "Read", id: "cached", ifNoneMatch: '"stale"' },
        { operationType: "Create", resourceBody: { id: "after-304", pk: "a" } },
      ],
      "a",
    );
    assert.equal(res.code, 207);
    assert.deepEqual(statuses(res.result), [304, 304, 200, 201]);
    assert.equal(res.result[0].resourceBody, undefined, "a 304 has no body");
    assert.equal(res.result[2].resourceBody.n, 1);
    assert.equal((await container.item("after-304", "a").read()).statusCode, 200, "committed");
  });

  it("leaves bodies of writes out when asked to", async () => {
    const res = await container.items.batch(
      [
        { operationType: "Create", resourceBody: { id: "m1", pk: "a" } },
        { operationType: "Read", id: "m1" },
      ],
      "a",
      { contentResponseOnWriteEnabled: false },
    );
    assert.equal(res.code, 200);
    assert.deepEqual(statuses(res.result), [201, 200]);
    assert.equal("resourceBody" in res.result[0], false, "a minimal write has no resourceBody");
    assert.equal(res.result[1].resourceBody.id, "m1", "reads always carry the item");
  });

  it("runs bulk operations across partitions", async () => {
    const results = await container.items.executeBulkOperations([
      // executeBulkOperations wants every operation's partition key.
      { operationType: "Create", partitionKey: "p1", resourceBody: { id: "k1", pk: "p1", n: 1 } },
      { operationType: "Create", partitionKey: "p2", resourceBody: { id: "k2", pk: "p2", n: 2 } },
      { operationType: "Upsert", partitionKey: "p3", resourceBody: { id: "k3", pk: "p3", n: 3 } },
      { operationType: "Create", partitionKey: "a", resourceBody: { id: "r1", pk: "a" } },
      { operationType: "Read", id: "b1", partitionKey: "a" },
      { operationType: "Patch", id: "k1", partitionKey: "p1", resourceBody: { operations: [{ op: "set", path: "/n", value: 9 }] } },
      { operationType: "Delete", id: "m1", partitionKey: "a" },
    ]);
    const codes = results.map((r) => r.response?.statusCode ?? r.error?.code);
    assert.deepEqual(codes, [201, 201, 201, 409, 200, 200, 204]);
    assert.equal(results[4].response.resourceBody.id, "b1");
    assert.equal((await container.item("k1", "p1").read()).resource.n, 9);
    assert.equal(await statusOf(container.item("m1", "a").read()), 404);

    // The older bulk API takes the key from the body when it is left out.
    const legacy = await container.items.bulk(
      [
        { operationType: "Create", resourceBody: { id: "l1", pk: "p1" } },
        { operationType: "Read", id: "k2", partitionKey: "p2" },
        { operationType: "Read", id: "nope", partitionKey: "p2" },
      ],
      { continueOnError: true },
    );
    assert.deepEqual(statuses(legacy), [201, 200, 404]);
  });

  it("patches an item", async () => {
    const item = container.item("k2", "p2");
    const res = await item.patch([
      { op: "incr", path: "/n", value: 3 },
      { op: "add", path: "/tags", value: ["x"] },
    ]);
    assert.equal(res.statusCode, 200);
    assert.equal(res.resource.n, 5);
    assert.deepEqual(res.resource.tags, ["x"]);

    const cond = await item.patch({ condition: "from c where c.n = 5", operations: [{ op: "set", path: "/ok", value: true }] });
    assert.equal(cond.statusCode, 200);
    assert.equal(cond.resource.ok, true);
    assert.equal(
      await statusOf(item.patch({ condition: "from c where c.n = 0", operations: [{ op: "remove", path: "/ok" }] })),
      412,
      "a false condition",
    );
    assert.equal(await statusOf(item.patch([{ op: "replace", path: "/missing", value: 1 }])), 400);
  });
});
