package integration

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Server-side scripts over the raw protocol, as a client without an SDK
// sends them: the resources, an execution with parameters and logging,
// a trigger named in a header, a UDF in a query, and the errors.
func TestScriptsRawProtocol(t *testing.T) {
	e := start(t)
	e.container(e.database("db"), azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	const coll = "/dbs/db/colls/c"
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	sproc := `function (a, b) { console.log("adding"); var c = getContext().getCollection();
		c.createDocument(c.getSelfLink(), {id: "sum", pk: "p", v: a + b}, function (err, d) { if (err) throw err; getContext().getResponse().setBody(d.v); }); }`
	body, _ := json.Marshal(map[string]string{"id": "add", "body": sproc})
	created := expectStatus(t, e.do("POST", coll+"/sprocs", body, nil), http.StatusCreated, "create sproc")
	var res map[string]any
	if err := json.Unmarshal(created.body, &res); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"_rid", "_self", "_etag", "_ts"} {
		if res[p] == nil {
			t.Errorf("the created sproc has no %s", p)
		}
	}
	expectStatus(t, e.do("POST", coll+"/sprocs", body, nil), http.StatusConflict, "create it again")
	// A body that does not compile is kept; it fails when run.
	bad, _ := json.Marshal(map[string]string{"id": "bad", "body": "function ( {"})
	expectStatus(t, e.do("POST", coll+"/sprocs", bad, nil), http.StatusCreated, "a body that does not compile")
	expectStatus(t, e.do("POST", coll+"/sprocs/bad", []byte(`[]`), pk), http.StatusBadRequest, "run a body that does not compile")
	// Replace with a stale etag fails; with the current one it works.
	stale := map[string]string{"If-Match": `"stale"`}
	expectStatus(t, e.do("PUT", coll+"/sprocs/add", body, stale), http.StatusPreconditionFailed, "replace with a stale etag")
	expectStatus(t, e.do("PUT", coll+"/sprocs/add", body, map[string]string{"If-Match": res["_etag"].(string)}), http.StatusOK, "replace")
	feed := expectStatus(t, e.do("GET", coll+"/sprocs", nil, nil), http.StatusOK, "feed")
	if !strings.Contains(string(feed.body), `"StoredProcedures":[{`) {
		t.Errorf("feed: %s", feed.body)
	}

	// Execute with parameters and logging.
	hdr := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-documentdb-script-enable-logging": "true"}
	out := expectStatus(t, e.do("POST", coll+"/sprocs/add", []byte(`[2, 3]`), hdr), http.StatusOK, "execute")
	if string(out.body) != "5" {
		t.Errorf("execute: %s", out.body)
	}
	if log, _ := url.PathUnescape(out.header.Get("x-ms-documentdb-script-log-results")); log != "adding" {
		t.Errorf("log results %q", out.header.Get("x-ms-documentdb-script-log-results"))
	}
	if out.header.Get("x-ms-request-charge") == "" {
		t.Error("no request charge")
	}
	// Run again: the create conflicts, the script throws, 400.
	failed := expectStatus(t, e.do("POST", coll+"/sprocs/add", []byte(`[2, 3]`), pk), http.StatusBadRequest, "execute again")
	if !strings.Contains(string(failed.body), "Entity with the specified id already exists") {
		t.Errorf("the script's error: %s", failed.body)
	}
	expectStatus(t, e.do("POST", coll+"/sprocs/none", []byte(`[]`), pk), http.StatusNotFound, "a missing sproc")

	// A pre-trigger named in a header.
	trig, _ := json.Marshal(map[string]string{"id": "upper", "triggerType": "Pre", "triggerOperation": "Create",
		"body": `function () { var r = getContext().getRequest(), d = r.getBody(); d.name = d.name.toUpperCase(); r.setBody(d); }`})
	expectStatus(t, e.do("POST", coll+"/triggers", trig, nil), http.StatusCreated, "create trigger")
	withTrigger := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-documentdb-pre-trigger-include": "upper"}
	item := expectStatus(t, e.do("POST", coll+"/docs", []byte(`{"id":"t","pk":"p","name":"ada"}`), withTrigger), http.StatusCreated, "create with the trigger")
	if !strings.Contains(string(item.body), `"name":"ADA"`) {
		t.Errorf("the trigger did not run: %s", item.body)
	}

	// A pre-trigger may give a created or upserted document another id,
	// which it is stored under; a replace keeps the id it addresses.
	rename, _ := json.Marshal(map[string]string{"id": "rename", "triggerType": "Pre", "triggerOperation": "All",
		"body": `function () { var r = getContext().getRequest(), d = r.getBody(); d.id = d.id.toUpperCase() + "t1"; r.setBody(d); }`})
	expectStatus(t, e.do("POST", coll+"/triggers", rename, nil), http.StatusCreated, "create renaming trigger")
	withRename := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-documentdb-pre-trigger-include": "rename"}
	renamed := expectStatus(t, e.do("POST", coll+"/docs", []byte(`{"id":"doc1","pk":"p"}`), withRename), http.StatusCreated, "create with the renaming trigger")
	if !strings.Contains(string(renamed.body), `"id":"DOC1t1"`) {
		t.Errorf("created with the renaming trigger: %s", renamed.body)
	}
	expectStatus(t, e.do("GET", coll+"/docs/DOC1t1", nil, pk), http.StatusOK, "read the renamed document")
	expectStatus(t, e.do("GET", coll+"/docs/doc1", nil, pk), http.StatusNotFound, "read the name before the trigger")
	upsertRename := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-documentdb-pre-trigger-include": "rename", "x-ms-documentdb-is-upsert": "true"}
	expectStatus(t, e.do("POST", coll+"/docs", []byte(`{"id":"doc2","pk":"p"}`), upsertRename), http.StatusCreated, "upsert with the renaming trigger")
	expectStatus(t, e.do("GET", coll+"/docs/DOC2t1", nil, pk), http.StatusOK, "read the upserted document")
	expectStatus(t, e.do("PUT", coll+"/docs/DOC1t1", []byte(`{"id":"DOC1t1","pk":"p"}`), withRename), http.StatusBadRequest, "replace with the renaming trigger")

	// A pre-trigger whose request body is no longer a document: a 400 that
	// says so, and nothing stored.
	number, _ := json.Marshal(map[string]string{"id": "number", "triggerType": "Pre", "triggerOperation": "Create",
		"body": `function () { getContext().getRequest().setBody(42); }`})
	expectStatus(t, e.do("POST", coll+"/triggers", number, nil), http.StatusCreated, "create the number trigger")
	withNumber := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-documentdb-pre-trigger-include": "number"}
	refused := expectStatus(t, e.do("POST", coll+"/docs", []byte(`{"id":"n42","pk":"p"}`), withNumber), http.StatusBadRequest, "create with the number trigger")
	if !strings.Contains(string(refused.body), "left a request body that is not a document: 42") {
		t.Errorf("the number trigger's refusal: %s", refused.body)
	}
	expectStatus(t, e.do("GET", coll+"/docs/n42", nil, pk), http.StatusNotFound, "read what the number trigger refused")

	// A UDF in a query.
	udf, _ := json.Marshal(map[string]string{"id": "shout", "body": `function (s) { return s + "!"; }`})
	expectStatus(t, e.do("POST", coll+"/udfs", udf, nil), http.StatusCreated, "create udf")
	q := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-documentdb-isquery": "True", "Content-Type": "application/query+json"}
	rows := expectStatus(t, e.do("POST", coll+"/docs", []byte(`{"query":"SELECT VALUE udf.shout(c.name) FROM c WHERE c.id = 't'"}`), q), http.StatusOK, "query with a udf")
	if !strings.Contains(string(rows.body), `"Documents":["ADA!"]`) {
		t.Errorf("udf query: %s", rows.body)
	}

	// Deleting them.
	for _, path := range []string{"/sprocs/add", "/triggers/upper", "/udfs/shout"} {
		expectStatus(t, e.do("DELETE", coll+path, nil, nil), http.StatusNoContent, "delete "+path)
		expectStatus(t, e.do("GET", coll+path, nil, nil), http.StatusNotFound, "read deleted "+path)
	}
}

// TestScriptBodyIsNotCompiledOnWrite: as the service does, a stored
// procedure, trigger or function is kept whatever its body, which comes
// back as written; one that does not compile fails when it runs, with 400.
func TestScriptBodyIsNotCompiledOnWrite(t *testing.T) {
	e := start(t)
	e.database("db")
	const coll = "/dbs/db/colls/c"
	expectStatus(t, e.do("POST", "/dbs/db/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), nil), http.StatusCreated, "container")
	text := "Line Separator (\u2028) & Paragraph Separator (\u2029) & Next Line (\u0085) & نیم\u200cفاصله"
	for _, kind := range []string{"sprocs", "triggers", "udfs"} {
		def := map[string]string{"id": "odd", "body": text}
		if kind == "triggers" {
			def["triggerType"], def["triggerOperation"] = "Pre", "All"
		}
		body, _ := json.Marshal(def)
		expectStatus(t, e.do("POST", coll+"/"+kind, body, nil), http.StatusCreated, "create "+kind+" with a body that is not JavaScript")
		read := expectStatus(t, e.do("GET", coll+"/"+kind+"/odd", nil, nil), http.StatusOK, "read "+kind)
		var got struct{ Body string }
		if err := json.Unmarshal(read.body, &got); err != nil || got.Body != text {
			t.Errorf("%s body read back as %q (%v), want %q", kind, got.Body, err, text)
		}
	}
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	run := expectStatus(t, e.do("POST", coll+"/sprocs/odd", []byte(`[]`), pk), http.StatusBadRequest, "run it")
	if !strings.Contains(string(run.body), "Encountered exception while compiling Javascript") {
		t.Errorf("running a body that does not compile: %s", run.body)
	}
	withTrigger := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-documentdb-pre-trigger-include": "odd"}
	expectStatus(t, e.do("POST", coll+"/docs", []byte(`{"id":"a","pk":"p"}`), withTrigger), http.StatusBadRequest, "a write naming the trigger")
	expectStatus(t, e.do("GET", coll+"/docs/a", nil, pk), http.StatusNotFound, "the write was not kept")
	q := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-documentdb-isquery": "True", "Content-Type": "application/query+json"}
	expectStatus(t, e.do("POST", coll+"/docs", []byte(`{"id":"b","pk":"p"}`), pk), http.StatusCreated, "an item")
	expectStatus(t, e.do("POST", coll+"/docs", []byte(`{"query":"SELECT VALUE udf.odd(c.id) FROM c"}`), q), http.StatusBadRequest, "a query calling the function")
}
