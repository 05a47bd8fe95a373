// Users, permissions and resource tokens through the official JavaScript
// SDK: a master-key client creates a user and permissions, then clients
// built from the tokens (resourceTokens and permissionFeed) read, query and
// write within their grant and are refused outside it.
//
// Environment: see mayfly.js.

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import https from "node:https";
import { randomUUID } from "node:crypto";
import { CosmosClient } from "@azure/cosmos";
import { endpoint, key, serverCertificate, statusOf } from "./mayfly.js";

describe("resource tokens through the JavaScript SDK", () => {
  const dbId = `js-perms-${randomUUID()}`;
  let agent;
  let admin;
  let database;
  let user;
  const clients = [];

  before(async () => {
    agent = new https.Agent({ ca: await serverCertificate(), keepAlive: true });
    admin = new CosmosClient({ endpoint, key, agent });
    ({ database } = await admin.databases.create({ id: dbId }));
    const { container } = await database.containers.create({ id: "c", partitionKey: { paths: ["/pk"] } });
    await database.containers.create({ id: "other", partitionKey: { paths: ["/pk"] } });
    await container.items.create({ id: "a", pk: "p", n: 1 });
    await container.items.create({ id: "b", pk: "q", n: 2 });
    ({ user } = await database.users.create({ id: "reader" }));
  });

  after(async () => {
    for (const c of clients) c.dispose();
    if (database) assert.equal(await statusOf(database.delete()), 204, "database delete");
    admin?.dispose();
  });

  function tokenClient(options) {
    const c = new CosmosClient({ endpoint, agent, ...options });
    clients.push(c);
    return c;
  }

  it("manages users and permissions with the master key", async () => {
    const { resources: users } = await database.users.readAll().fetchAll();
    assert.deepEqual(users.map((u) => u.id), ["reader"]);
    const { resource: p } = await user.permissions.create({
      id: "read-c",
      permissionMode: "Read",
      resource: `dbs/${dbId}/colls/c`,
    });
    assert.equal(p.permissionMode, "Read");
    assert.match(p._token, /^type=resource&ver=1&sig=/);
    assert.equal(await statusOf(user.permissions.create({ id: "read-c", permissionMode: "Read", resource: `dbs/${dbId}` })), 409);
    assert.equal(await statusOf(user.permission("missing").read()), 404);

    // A delete at a stale etag is refused and deletes nothing.
    const { user: temp } = await database.users.create({ id: "temp" });
    const { permission, resource: tp } = await temp.permissions.create({ id: "t", permissionMode: "Read", resource: `dbs/${dbId}` });
    const stale = { accessCondition: { type: "IfMatch", condition: '"stale"' } };
    assert.equal(await statusOf(permission.delete(stale)), 412, "permission delete at a stale etag");
    assert.equal(await statusOf(temp.delete(stale)), 412, "user delete at a stale etag");
    assert.equal(await statusOf(permission.delete({ accessCondition: { type: "IfMatch", condition: tp._etag } })), 204);
    assert.equal(await statusOf(temp.delete()), 204);
  });

  it("a Read token reads and queries its container and nothing else", async () => {
    const { resource: p } = await user.permission("read-c").read();
    const c = tokenClient({ resourceTokens: { [`dbs/${dbId}/colls/c`]: p._token } });
    const container = c.database(dbId).container("c");
    const { resource: a } = await container.item("a", "p").read();
    assert.equal(a.n, 1);
    const { resources } = await container.items
      .query("SELECT c.id FROM c ORDER BY c.id", { partitionKey: "p" })
      .fetchAll();
    assert.deepEqual(resources.map((r) => r.id), ["a"]);
    assert.equal(await statusOf(container.items.create({ id: "x", pk: "p" })), 403);
    assert.equal(await statusOf(container.item("a", "p").delete()), 403);
    // The SDK has no token for another container and sends none (401);
    // handed this token for it, the server refuses it (403).
    assert.equal(await statusOf(c.database(dbId).container("other").item("a", "p").read()), 401);
    const misused = tokenClient({ resourceTokens: { [`dbs/${dbId}/colls/other`]: p._token } });
    assert.equal(await statusOf(misused.database(dbId).container("other").item("a", "p").read()), 403);
  });

  it("an All token limited to a partition writes there only (permissionFeed)", async () => {
    // A user holds one permission per resource, so this is another user's.
    const { user: writer } = await database.users.create({ id: "writer" });
    await writer.permissions.create({
      id: "all-p",
      permissionMode: "All",
      resource: `dbs/${dbId}/colls/c`,
      resourcePartitionKey: ["p"],
    });
    const all = await writer.permission("all-p").read();
    const c = tokenClient({ permissionFeed: [all.resource] });
    const container = c.database(dbId).container("c");
    const { statusCode } = await container.items.create({ id: "new", pk: "p" });
    assert.equal(statusCode, 201);
    assert.equal(await statusOf(container.items.create({ id: "new", pk: "q" })), 403);
    assert.equal(await statusOf(container.item("b", "q").read()), 403);
    const { resource } = await container.item("new", "p").read();
    assert.equal(resource.id, "new");
  });

  it("a deleted permission's token stops working", async () => {
    const { resource: p } = await user.permission("read-c").read();
    await user.permission("read-c").delete();
    const c = tokenClient({ resourceTokens: { [`dbs/${dbId}/colls/c`]: p._token } });
    assert.equal(await statusOf(c.database(dbId).container("c").item("a", "p").read()), 401);
  });
});
