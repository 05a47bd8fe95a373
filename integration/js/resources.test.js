// Databases, containers and offers through the official JavaScript SDK
// against a running Mayfly: read feeds paged by maxItemCount, a
// conditional container delete and a conditional offer replace.
//
// Environment: see mayfly.js.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { randomUUID } from "node:crypto";
import { CosmosClient } from "@azure/cosmos";
import { endpoint, key, serverCertificate, statusOf } from "./mayfly.js";

describe("JavaScript SDK resources against Mayfly", () => {
  const dbId = `js-resources-${randomUUID()}`;
  let client;
  let database;

  before(async () => {
    const agent = new https.Agent({ ca: await serverCertificate(), keepAlive: true });
    client = new CosmosClient({ endpoint, key, agent });
    ({ database } = await client.databases.create({ id: dbId }));
  });

  after(async () => {
    if (database) await database.delete();
    client?.dispose();
  });

  it("pages a read feed of containers by maxItemCount", async () => {
    const ids = ["c0", "c1", "c2", "c3", "c4"];
    for (const id of ids) await database.containers.create({ id, partitionKey: { paths: ["/pk"], version: 2 } });
    const iterator = database.containers.readAll({ maxItemCount: 2 });
    const pages = [];
    while (iterator.hasMoreResults() && pages.length < 10) {
      pages.push((await iterator.fetchNext()).resources.map((c) => c.id));
    }
    assert.deepEqual(pages, [["c0", "c1"], ["c2", "c3"], ["c4"]]);
    const { resources } = await database.containers.readAll().fetchAll();
    assert.deepEqual(resources.map((c) => c.id), ids);

    // Two databases at least: this suite's and a second one.
    const { database: second } = await client.databases.create({ id: `${dbId}-2` });
    try {
      const first = await client.databases.readAll({ maxItemCount: 1 }).fetchNext();
      assert.equal(first.resources.length, 1);
      assert.ok(first.continuationToken, "more databases follow");
    } finally {
      await second.delete();
    }
  });

  it("deletes a container only at the etag it is given", async () => {
    const { container, resource } = await database.containers.create({ id: "guarded", partitionKey: { paths: ["/pk"] } });
    const replaced = await container.replace({ ...resource, defaultTtl: 60 });
    const stale = { accessCondition: { type: "IfMatch", condition: resource._etag } };
    assert.equal(await statusOf(container.delete(stale)), 412, "a delete at a replaced etag");
    assert.equal((await container.read()).statusCode, 200, "still there");
    const current = { accessCondition: { type: "IfMatch", condition: replaced.resource._etag } };
    assert.equal(await statusOf(container.delete(current)), 204);
  });

  it("replaces an offer only at the etag it is given", async () => {
    const { container } = await database.containers.create({ id: "offered", partitionKey: { paths: ["/pk"] }, throughput: 400 });
    const { resource: offer } = await container.readOffer();
    const raised = await client.offer(offer.id).replace({ ...offer, content: { ...offer.content, offerThroughput: 500 } });
    assert.equal(raised.statusCode, 200);
    const stale = { accessCondition: { type: "IfMatch", condition: offer._etag } };
    const again = { ...offer, content: { ...offer.content, offerThroughput: 600 } };
    assert.equal(await statusOf(client.offer(offer.id).replace(again, stale)), 412, "a replace at an old etag");
    assert.equal((await container.readOffer()).resource.content.offerThroughput, 500);
    const current = { accessCondition: { type: "IfMatch", condition: raised.resource._etag } };
    assert.equal((await client.offer(offer.id).replace(again, current)).resource.content.offerThroughput, 600);
  });
});
