package integration

import (
	"net/http"
	"testing"
)

// TestUsersAndPermissions drives users and permissions through the REST
// protocol: create, read, feed, query, rename, If-Match, conflicts, 404s,
// and their removal with their user and their database.
func TestUsersAndPermissions(t *testing.T) {
	e := start(t)
	e.database("pdb")
	u := expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users", []byte(`{"id":"alice"}`), nil), http.StatusCreated, "create user")
	for _, k := range []string{"_rid", "_self", "_etag", "_ts", "_permissions"} {
		if u[k] == nil {
			t.Errorf("user has no %s: %v", k, u)
		}
	}
	expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users", []byte(`{"id":"alice"}`), nil), http.StatusConflict, "duplicate user")
	expectJSON(t, e.do(http.MethodPost, "/dbs/nodb/users", []byte(`{"id":"x"}`), nil), http.StatusNotFound, "user in a missing database")
	expectJSON(t, e.do(http.MethodGet, "/dbs/pdb/users/bob", nil, nil), http.StatusNotFound, "missing user")
	got := expectJSON(t, e.do(http.MethodGet, "/dbs/pdb/users/alice", nil, nil), http.StatusOK, "read user")
	if got["_rid"] != u["_rid"] || got["_etag"] != u["_etag"] {
		t.Errorf("read user = %v, want %v", got, u)
	}

	p := expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users/alice/permissions",
		[]byte(`{"id":"p1","permissionMode":"Read","resource":"dbs/pdb/colls/c1","resourcePartitionKey":["a"]}`), nil),
		http.StatusCreated, "create permission")
	if p["permissionMode"] != "Read" || p["resource"] != "dbs/pdb/colls/c1" || p["_etag"] == nil {
		t.Errorf("permission = %v", p)
	}
	expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users/alice/permissions",
		[]byte(`{"id":"p1","permissionMode":"All","resource":"dbs/pdb"}`), nil), http.StatusConflict, "duplicate permission")
	expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users/alice/permissions",
		[]byte(`{"id":"p9","permissionMode":"All","resource":"dbs/pdb/colls/c1"}`), nil), http.StatusConflict, "second permission on one resource")
	for _, bad := range []string{
		`{"id":"p2","permissionMode":"Write","resource":"dbs/pdb"}`,
		`{"id":"p2","permissionMode":"All"}`,
		`{"id":"p2","permissionMode":"All","resource":"dbs/other"}`,
		`{"id":"p2","permissionMode":"All","resource":"dbs/pdb/users/alice"}`,
		`{"id":"p2","permissionMode":"All","resource":"dbs/pdb/colls/c1","resourcePartitionKey":"a"}`,
	} {
		expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users/alice/permissions", []byte(bad), nil), http.StatusBadRequest, bad)
	}
	expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users/alice/permissions",
		[]byte(`{"id":"p2","permissionMode":"All","resource":"dbs/pdb/colls/c1/docs/i1"}`),
		map[string]string{"x-ms-documentdb-is-upsert": "true"}), http.StatusCreated, "upsert creates")
	p2 := expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users/alice/permissions",
		[]byte(`{"id":"p2","permissionMode":"Read","resource":"dbs/pdb/colls/c1/docs/i1"}`),
		map[string]string{"x-ms-documentdb-is-upsert": "true"}), http.StatusOK, "upsert replaces")
	expectJSON(t, e.do(http.MethodPut, "/dbs/pdb/users/alice/permissions/p2",
		[]byte(`{"id":"p2","permissionMode":"All","resource":"dbs/pdb"}`), map[string]string{"If-Match": `"stale"`}),
		http.StatusPreconditionFailed, "replace permission with a stale etag")
	expectJSON(t, e.do(http.MethodPut, "/dbs/pdb/users/alice/permissions/p2",
		[]byte(`{"id":"p2","permissionMode":"All","resource":"dbs/pdb"}`), map[string]string{"If-Match": p2["_etag"].(string)}),
		http.StatusOK, "replace permission")
	// A replace with a new id renames the permission, keeping its _rid;
	// permissionMode comes back as it was written (the Python SDK writes
	// "all" and "read").
	renamed := expectJSON(t, e.do(http.MethodPut, "/dbs/pdb/users/alice/permissions/p2",
		[]byte(`{"id":"p3","permissionMode":"all","resource":"dbs/pdb"}`), nil), http.StatusOK, "rename permission")
	if renamed["id"] != "p3" || renamed["_rid"] != p2["_rid"] || renamed["permissionMode"] != "all" {
		t.Errorf("renamed permission = %v, want id p3, _rid %v, permissionMode all", renamed, p2["_rid"])
	}
	expectJSON(t, e.do(http.MethodGet, "/dbs/pdb/users/alice/permissions/p2", nil, nil), http.StatusNotFound, "permission under its old id")
	expectJSON(t, e.do(http.MethodPut, "/dbs/pdb/users/alice/permissions/p3",
		[]byte(`{"id":"p1","permissionMode":"All","resource":"dbs/pdb"}`), nil), http.StatusConflict, "rename onto another permission")
	expectJSON(t, e.do(http.MethodPut, "/dbs/pdb/users/alice/permissions/p3",
		[]byte(`{"id":"p2","permissionMode":"All","resource":"dbs/pdb"}`), nil), http.StatusOK, "rename it back")
	feed := expectJSON(t, e.do(http.MethodGet, "/dbs/pdb/users/alice/permissions", nil, nil), http.StatusOK, "permission feed")
	if n := len(feed["Permissions"].([]any)); n != 2 {
		t.Errorf("permission feed has %d, want 2: %v", n, feed)
	}
	q := expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users/alice/permissions", []byte(`{"query":"SELECT * FROM root r WHERE r.permissionMode = 'All'"}`),
		map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true"}), http.StatusOK, "permission query")
	if n := len(q["Permissions"].([]any)); n != 1 {
		t.Errorf("permission query has %d, want 1: %v", n, q)
	}

	// Renaming keeps the permissions; the old name is gone.
	expectJSON(t, e.do(http.MethodPut, "/dbs/pdb/users/alice", []byte(`{"id":"alicia"}`), map[string]string{"If-Match": `"stale"`}),
		http.StatusPreconditionFailed, "rename with a stale etag")
	expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users", []byte(`{"id":"bob"}`), nil), http.StatusCreated, "create bob")
	expectJSON(t, e.do(http.MethodPut, "/dbs/pdb/users/alice", []byte(`{"id":"bob"}`), nil), http.StatusConflict, "rename onto bob")
	expectJSON(t, e.do(http.MethodPut, "/dbs/pdb/users/alice", []byte(`{"id":"alicia"}`), map[string]string{"If-Match": u["_etag"].(string)}),
		http.StatusOK, "rename")
	expectJSON(t, e.do(http.MethodGet, "/dbs/pdb/users/alice", nil, nil), http.StatusNotFound, "old name")
	expectJSON(t, e.do(http.MethodGet, "/dbs/pdb/users/alicia/permissions/p1", nil, nil), http.StatusOK, "permission after rename")
	users := expectJSON(t, e.do(http.MethodGet, "/dbs/pdb/users", nil, nil), http.StatusOK, "user feed")
	if n := len(users["Users"].([]any)); n != 2 {
		t.Errorf("user feed has %d, want 2: %v", n, users)
	}
	uq := expectJSON(t, e.do(http.MethodPost, "/dbs/pdb/users", []byte(`{"query":"SELECT * FROM root r WHERE r.id = 'bob'"}`),
		map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true"}), http.StatusOK, "user query")
	if n := len(uq["Users"].([]any)); n != 1 {
		t.Errorf("user query has %d, want 1: %v", n, uq)
	}

	expectJSON(t, e.do(http.MethodDelete, "/dbs/pdb/users/alicia/permissions/p1", nil, nil), http.StatusNoContent, "delete permission")
	expectJSON(t, e.do(http.MethodDelete, "/dbs/pdb/users/alicia/permissions/p1", nil, nil), http.StatusNotFound, "delete it again")
	expectJSON(t, e.do(http.MethodDelete, "/dbs/pdb/users/alicia", nil, nil), http.StatusNoContent, "delete user")
	expectJSON(t, e.do(http.MethodGet, "/dbs/pdb/users/alicia/permissions", nil, nil), http.StatusNotFound, "permissions of a deleted user")

	// Deleting the database deletes its users; a new one of that name has none.
	expectJSON(t, e.do(http.MethodDelete, "/dbs/pdb", nil, nil), http.StatusNoContent, "delete database")
	e.database("pdb")
	users = expectJSON(t, e.do(http.MethodGet, "/dbs/pdb/users", nil, nil), http.StatusOK, "user feed of the new database")
	if n := len(users["Users"].([]any)); n != 0 {
		t.Errorf("new database has %d users: %v", n, users)
	}
}
