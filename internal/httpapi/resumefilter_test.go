package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// The query body's resumeFilter (the .NET SDK's, when it resumes a
// cross-partition ORDER BY) is read: a range answers the rows after its
// values. One that does not fit is a 400.
func TestResumeFilterInTheBody(t *testing.T) {
	h := newTestHandler(t)
	if rec := serve(h, "POST", "/dbs/db/colls", `{"id":"o","partitionKey":{"paths":["/pk"]}}`, nil); rec.Code != http.StatusCreated {
		t.Fatalf("create the container: %d %s", rec.Code, rec.Body)
	}
	for _, n := range []string{"1", "2", "3", "4"} {
		if rec := serve(h, "POST", "/dbs/db/colls/o/docs", `{"id":"i`+n+`","pk":"p","n":`+n+`}`, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}); rec.Code != http.StatusCreated {
			t.Fatalf("create i%s: %d %s", n, rec.Code, rec.Body)
		}
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
		{`{"value":[2],"rid":"x","exclude":true}`, []int{3, 4}},
		{`{"value":[2],"exclude":false}`, []int{2, 3, 4}},
		{`{"value":["a"],"exclude":true}`, nil},
		{`{"value":[{"type":"array","low":1,"high":2}],"exclude":true}`, nil},
	} {
		code, got := query(`{` + q + `,"resumeFilter":` + tc.filter + `}`)
		if code != http.StatusOK || !slices.Equal(got, tc.want) {
			t.Errorf("resumeFilter %s: %d %v, want %v", tc.filter, code, got, tc.want)
		}
	}
	for _, bad := range []string{`{"value":[]}`, `{"value":[1,2]}`, `[1]`, `{"value":[{"type":"map"}]}`} {
		if code, _ := query(`{` + q + `,"resumeFilter":` + bad + `}`); code != http.StatusBadRequest {
			t.Errorf("resumeFilter %s: %d, want 400", bad, code)
		}
	}
}
