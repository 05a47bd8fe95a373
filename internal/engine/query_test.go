package engine

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// The TOP … ORDER BY walk of the index filters candidates with the WHERE
// clause alone; that filter must judge GetCurrentDateTime() by the
// operation's "now" as the full query does, or it drops every row.
func TestOrderedWalkFilterUsesOperationNow(t *testing.T) {
	be := newBatchEnv(t, "null")
	past := batchT0.Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.0000000Z")
	var items []string
	for i := 0; i < 20; i++ {
		items = append(items, `{"id":"`+strconv.Itoa(i)+`","pk":"a","n":`+strconv.Itoa(i)+`,"d":"`+past+`"}`)
	}
	be.seed(t, items...)
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"SELECT c.n FROM c WHERE c.n >= 0 AND c.d < GetCurrentDateTime() ORDER BY c.n", 20},
		{"SELECT TOP 5 c.n FROM c WHERE c.n >= 0 AND c.d < GetCurrentDateTime() ORDER BY c.n", 5},
		{"SELECT TOP 5 c.n FROM c WHERE c.d < GetCurrentDateTime() ORDER BY c.n DESC", 5},
	} {
		page, err := be.e.QueryItems(context.Background(), QueryParams{ItemRef: batchRef(`["a"]`), Query: tc.query, MaxItemCount: -1})
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if len(page.Items) != tc.want {
			t.Errorf("%s: %d rows, want %d", tc.query, len(page.Items), tc.want)
		}
	}
}
