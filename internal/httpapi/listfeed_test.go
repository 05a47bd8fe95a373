package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
)

// Read feeds of databases, containers and the other metadata resources
// honour x-ms-max-item-count: pages of that many, each with the
// continuation of the next, until the last, which has none.
func TestListFeedsPage(t *testing.T) {
	h := newTestHandler(t)
	for i := 0; i < 4; i++ {
		for _, r := range []struct{ path, body string }{
			{"/dbs", `{"id":"d` + strconv.Itoa(i) + `"}`},
			{"/dbs/db/colls", `{"id":"c` + strconv.Itoa(i) + `","partitionKey":{"paths":["/pk"]}}`},
			{"/dbs/db/users", `{"id":"u` + strconv.Itoa(i) + `"}`},
			{"/dbs/db/colls/c/sprocs", `{"id":"s` + strconv.Itoa(i) + `","body":"function () {}"}`},
		} {
			if rec := serve(h, "POST", r.path, r.body, nil); rec.Code != http.StatusCreated {
				t.Fatalf("POST %s: %d %s", r.path, rec.Code, rec.Body)
			}
		}
	}
	for _, f := range []struct {
		path, key string
		total     int
	}{
		{"/dbs", "Databases", 5},                          // db and d0–d3
		{"/dbs/db/colls", "DocumentCollections", 5},       // c and c0–c3
		{"/dbs/db/users", "Users", 4},                     // u0–u3
		{"/dbs/db/colls/c/sprocs", "StoredProcedures", 4}, // s0–s3
	} {
		read := func(headers map[string]string) (ids []string, cont string) {
			t.Helper()
			rec := serve(h, "GET", f.path, "", headers)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s %v: %d %s", f.path, headers, rec.Code, rec.Body)
			}
			var body map[string]json.RawMessage
			var items []struct{ ID string }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(body[f.key], &items); err != nil {
				t.Fatalf("GET %s: %s", f.path, rec.Body)
			}
			for _, it := range items {
				ids = append(ids, it.ID)
			}
			if got := headerValue(rec.Header(), "x-ms-item-count"); got != strconv.Itoa(len(ids)) {
				t.Fatalf("GET %s: x-ms-item-count %s for %d items", f.path, got, len(ids))
			}
			return ids, headerValue(rec.Header(), "x-ms-continuation")
		}
		all, cont := read(nil)
		if len(all) != f.total || cont != "" {
			t.Fatalf("GET %s without a page size: %v, continuation %q", f.path, all, cont)
		}
		var paged []string
		pages := 0
		for {
			ids, next := read(map[string]string{"x-ms-max-item-count": "2", "x-ms-continuation": cont})
			pages++
			if len(ids) > 2 || pages > f.total {
				t.Fatalf("GET %s: page %d holds %v", f.path, pages, ids)
			}
			paged = append(paged, ids...)
			if cont = next; cont == "" {
				break
			}
		}
		if pages != (f.total+1)/2 || len(paged) != len(all) {
			t.Fatalf("GET %s by twos: %d pages %v, want %v", f.path, pages, paged, all)
		}
		for i := range all {
			if paged[i] != all[i] {
				t.Fatalf("GET %s by twos: %v, want %v", f.path, paged, all)
			}
		}
		rec := serve(h, "GET", f.path, "", map[string]string{"x-ms-max-item-count": "2", "x-ms-continuation": "nonsense"})
		wantCosmosError(t, rec, rec.Body.Bytes(), http.StatusBadRequest, "GET "+f.path+" with a bad continuation")
	}
}
