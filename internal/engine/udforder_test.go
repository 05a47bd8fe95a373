package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// A UDF is known to every program a query's pages run: the rows of an
// ordered stream or of a TOP walk of the index, and the stream within a
// TOP or an OFFSET and LIMIT, which are compiled from rewrites of the
// query.
func TestUDFInRewrittenPrograms(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	for i := range 300 {
		be.seed(t, fmt.Sprintf(`{"id":"i%d","pk":"p%d","n":%d}`, i, i%10, i))
	}
	b, _ := json.Marshal(map[string]string{"id": "odd", "body": "function (x) { return x % 2 == 1; }"})
	if _, err := be.e.WriteScript(ctx, "db", "c", Functions, "", batchJSON(t, string(b)), ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		first string
	}{
		{"SELECT VALUE c.n FROM c WHERE udf.odd(c.n) ORDER BY c.n DESC", "299"},
		{"SELECT TOP 3 VALUE c.n FROM c WHERE udf.odd(c.n) ORDER BY c.n", "1"},
		{"SELECT TOP 3 VALUE udf.odd(c.n) FROM c WHERE c.n = 7", "true"},
		{"SELECT VALUE udf.odd(c.n) FROM c WHERE c.n = 8 OFFSET 0 LIMIT 5", "false"},
	} {
		p := QueryParams{ItemRef: batchRef(""), CrossPartition: true, RangeID: "0", Query: tc.query, MaxItemCount: 2}
		be.orderReady(t, p)
		page, err := be.e.QueryItems(ctx, p)
		if err != nil {
			t.Errorf("%s: %v", tc.query, err)
			continue
		}
		if len(page.Items) == 0 || string(page.Items[0]) != tc.first {
			t.Errorf("%s: %q, want %s first", tc.query, page.Items, tc.first)
		}
	}
}
