package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
)

// The query body's resumeFilter (the .NET SDK's, when it resumes a
// cross-partition ORDER BY) is read: a range answers the rows after its
// values, from its rid's document on among the rows at them. One that
// does not fit is a 400.
func TestResumeFilterInTheBody(t *testing.T) {
	h := newTestHandler(t)
	if rec := serve(h, "POST", "/dbs/db/colls", `{"id":"o","partitionKey":{"paths":["/pk"]}}`, nil); rec.Code != http.StatusCreated {
		t.Fatalf("create the container: %d %s", rec.Code, rec.Body)
	}
	rids := map[string]string{}
	for i, n := range []string{"1", "2", "3", "4", "2"} {
		id := fmt.Sprint("i", i+1)
		rec := serve(h, "POST", "/dbs/db/colls/o/docs", `{"id":"`+id+`","pk":"p","n":`+n+`}`, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
		if rec.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", id, rec.Code, rec.Body)
		}
		var doc struct {
			Rid string `json:"_rid"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		rids[id] = doc.Rid
	}
	query := func(body string) (int, []int) {
		headers := map[string]string{"content-type": "application/query+json", "x-ms-documentdb-isquery": "true", "x-ms-documentdb-partitionkeyrangeid": "0"}
		rec := serve(h, "POST", "/dbs/db/colls/o/docs", body, headers)
		var page struct{ Documents []int }
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
				t.Fatalf("%s: %s", body, rec.Body)
			}
		}
		return rec.Code, page.Documents
	}
	const q = `"query":"SELECT VALUE c.n FROM c WHERE (true) ORDER BY c.n"`
	for _, tc := range []struct {
		filter string
		want   []int
	}{
		{`{"value":[2],"exclude":true}`, []int{3, 4}},
		{`{"value":[2],"exclude":false}`, []int{2, 2, 3, 4}},
		{`{"value":[2],"rid":"` + rids["i2"] + `","exclude":false}`, []int{2, 2, 3, 4}},
		{`{"value":[2],"rid":"` + rids["i5"] + `","exclude":false}`, []int{2, 3, 4}},
		{`{"value":[2],"rid":"` + rids["i2"] + `","exclude":true}`, []int{2, 3, 4}},
		{`{"value":[2],"rid":null,"exclude":true}`, []int{3, 4}},
		{`{"value":["a"],"exclude":true}`, nil},
		{`{"value":[{"type":"array","low":1,"high":2}],"exclude":true}`, nil},
	} {
		code, got := query(`{` + q + `,"resumeFilter":` + tc.filter + `}`)
		if code != http.StatusOK || !slices.Equal(got, tc.want) {
			t.Errorf("resumeFilter %s: %d %v, want %v", tc.filter, code, got, tc.want)
		}
	}
	for _, bad := range []string{`{"value":[]}`, `{"value":[1,2]}`, `[1]`, `{"value":[{"type":"map"}]}`,
		`{"value":[2],"rid":"x"}`, `{"value":[2],"rid":5}`} {
		if code, _ := query(`{` + q + `,"resumeFilter":` + bad + `}`); code != http.StatusBadRequest {
			t.Errorf("resumeFilter %s: %d, want 400", bad, code)
		}
	}
}
