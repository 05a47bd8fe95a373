// The JavaScript SDK's change feed against a running Mayfly: latest-version
// mode from the beginning, from now, from a time, for one partition key and
// for a hierarchical prefix (which the SDK reads by effective partition key
// range), and all-versions-and-deletes mode, including a TTL expiry reported
// as a delete with timeToLiveExpired.
//
// Environment: see mayfly.js.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { randomUUID } from "node:crypto";
import {
  ChangeFeedMode,
  ChangeFeedPolicy,
  ChangeFeedRetentionTimeSpan,
  ChangeFeedStartFrom,
  CosmosClient,
  PartitionKeyKind,
} from "@azure/cosmos";
import { endpoint, key, serverCertificate } from "./mayfly.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// drain reads an iterator until it answers 304 and returns what it read.
async function drain(iterator) {
  const out = [];
  for (let i = 0; i < 1000; i++) {
    const res = await iterator.readNext();
    if (res.statusCode === 304) {
      assert.equal(res.result.length, 0, "304 has no items");
      assert.ok(res.continuationToken, "304 still has a continuation token");
      return out;
    }
    assert.equal(res.statusCode, 200);
    assert.ok(res.result.length > 0, "200 has items");
    assert.ok(res.continuationToken, "200 has a continuation token");
    out.push(...res.result);
  }
  throw new Error("the change feed never ran dry");
}

describe("JavaScript SDK change feed against Mayfly", () => {
  const dbId = `js-changefeed-${randomUUID()}`;
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

  it("reads the latest version of each item, in order, then only what changes", async () => {
    const { container } = await database.containers.create({ id: "latest", partitionKey: { paths: ["/pk"] } });
    for (let i = 0; i < 5; i++) {
      await container.items.create({ id: `i${i}`, pk: i % 2 ? "odd" : "even", n: i });
    }
    await container.item("i1", "odd").replace({ id: "i1", pk: "odd", n: 10 });

    const iterator = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
      maxItemCount: 2,
    });
    const first = await drain(iterator);
    // Each item once, in the order of its last change within its logical
    // partition (ranges, when a server has several, are read one after
    // another, and their LSNs are their own).
    assert.deepEqual(first.map((d) => d.id).sort(), ["i0", "i1", "i2", "i3", "i4"]);
    for (const [pk, order] of [["odd", ["i3", "i1"]], ["even", ["i0", "i2", "i4"]]]) {
      const mine = first.filter((d) => d.pk === pk);
      const lsns = mine.map((d) => d._lsn);
      assert.deepEqual([...lsns].sort((a, b) => a - b), lsns, `ascending _lsn within ${pk}`);
      assert.deepEqual(mine.map((d) => d.id), order, `the order of the last changes within ${pk}`);
    }
    assert.equal(first.find((d) => d.id === "i1").n, 10, "the latest version");

    // Only the next change, then nothing; a delete does not appear.
    await container.item("i3", "odd").replace({ id: "i3", pk: "odd", n: 30 });
    await container.item("i4", "even").delete();
    const next = await drain(iterator);
    assert.deepEqual(next.map((d) => [d.id, d.n]), [["i3", 30]]);

    // One logical partition.
    const odd = await drain(
      container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("odd") }),
    );
    assert.deepEqual(odd.map((d) => d.id), ["i1", "i3"]);

    // From now: nothing until the next write.
    const fromNow = container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
    assert.deepEqual(await drain(fromNow), []);
    await container.items.create({ id: "i5", pk: "even" });
    assert.deepEqual((await drain(fromNow)).map((d) => d.id), ["i5"]);

    // A continuation token resumes where it was taken.
    const res = await fromNow.readNext();
    assert.equal(res.statusCode, 304);
    await container.items.create({ id: "i6", pk: "odd" });
    const resumed = container.items.getChangeFeedIterator({
      changeFeedStartFrom: ChangeFeedStartFrom.Continuation(res.continuationToken),
    });
    assert.deepEqual((await drain(resumed)).map((d) => d.id), ["i6"]);
  });

  it("starts from a time", async () => {
    const { container } = await database.containers.create({ id: "since", partitionKey: { paths: ["/pk"] } });
    await container.items.create({ id: "before", pk: "p" });
    // The If-Modified-Since header has whole seconds.
    await sleep(1100);
    const since = new Date();
    await sleep(1100);
    await container.items.create({ id: "after", pk: "p" });
    const items = await drain(
      container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Time(since) }),
    );
    assert.deepEqual(items.map((d) => d.id), ["after"]);
  });

  it("reads a hierarchical key prefix by effective partition key range", async () => {
    const { container } = await database.containers.create({
      id: "hierarchical",
      partitionKey: { paths: ["/tenant", "/user"], kind: PartitionKeyKind.MultiHash, version: 2 },
    });
    await container.items.create({ id: "a", tenant: "t1", user: "u1" });
    await container.items.create({ id: "b", tenant: "t2", user: "u1" });
    await container.items.create({ id: "c", tenant: "t1", user: "u2" });
    const prefix = await drain(
      container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(["t1"]) }),
    );
    assert.deepEqual(prefix.map((d) => d.id), ["a", "c"]);
    const full = await drain(
      container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(["t1", "u2"]) }),
    );
    assert.deepEqual(full.map((d) => d.id), ["c"]);
  });

  it("reads all versions and deletes, an expiry as a delete with timeToLiveExpired", async () => {
    const { container } = await database.containers.create({
      id: "versions",
      partitionKey: { paths: ["/pk"] },
      defaultTtl: -1,
      changeFeedPolicy: new ChangeFeedPolicy(ChangeFeedRetentionTimeSpan.fromMinutes(10)),
    });
    const iterator = container.items.getChangeFeedIterator({
      changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
      changeFeedStartFrom: ChangeFeedStartFrom.Now(),
    });
    assert.deepEqual(await drain(iterator), [], "nothing yet");

    const created = (await container.items.create({ id: "x", pk: "p", n: 1 })).resource;
    await container.item("x", "p").replace({ id: "x", pk: "p", n: 2 });
    await container.item("x", "p").delete();
    const short = (await container.items.create({ id: "short", pk: "p", ttl: 1 })).resource;

    const records = await drain(iterator);
    assert.deepEqual(
      records.map((r) => `${r.metadata.operationType}:${r.current?.id ?? r.metadata.id}`),
      ["create:x", "replace:x", "delete:x", "create:short"],
    );
    const [create, replace, del] = records;
    assert.equal(create.current.n, 1);
    assert.equal(create.previous, undefined, "a create has no previous image");
    assert.equal(replace.current.n, 2);
    assert.equal(replace.previous.n, 1);
    assert.equal(replace.metadata.previousImageLSN, create.metadata.lsn);
    assert.ok(replace.metadata.lsn > create.metadata.lsn);
    assert.equal(del.current, undefined, "a delete has no current image");
    assert.equal(del.metadata.id, "x");
    assert.deepEqual(del.metadata.partitionKey, { pk: "p" });
    assert.equal(del.metadata.timeToLiveExpired, false);
    assert.ok(create.metadata.crts >= created._ts);

    // The purger removes "short" about a second after it is due.
    let expiry;
    for (let i = 0; i < 60 && !expiry; i++) {
      await sleep(100);
      expiry = (await drain(iterator)).find((r) => r.metadata.operationType === "delete");
    }
    assert.ok(expiry, "an expiry record within 6 seconds");
    assert.equal(expiry.metadata.id, "short");
    assert.equal(expiry.metadata.timeToLiveExpired, true);
    assert.ok(expiry.metadata.crts >= short._ts + 1, "not before it was due");
    assert.deepEqual(await drain(iterator), [], "reported once");
  });
});
