package engine

import (
	"context"
	"strings"
	"testing"
)

// A query plan refuses what running the query would refuse, as the
// service's plan does, so an SDK learns of it before it runs anything; a
// query that calls a user-defined function is planned without calling it.
func TestPlanRefusesWhatTheRunRefuses(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	ctx := context.Background()
	for _, tc := range []struct{ query, err string }{
		{"SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g ORDER BY c.g", "ORDER BY is not supported together with GROUP BY"},
		{"SELECT VALUE x.id FROM c", "could not be resolved"},
		{"SELECT VALUE udf.double(c.n) FROM c ORDER BY c.n", ""},
		{"SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g", ""},
	} {
		_, err := be.e.PlanFor(ctx, "db", "c", tc.query, nil, "")
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("plan of %s: %v", tc.query, err)
		case tc.err != "" && (!isCode(err, BadRequest) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("plan of %s: %v, want a 400 saying %q", tc.query, err, tc.err)
		}
	}
}
