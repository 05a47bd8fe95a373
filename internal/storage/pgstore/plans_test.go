package pgstore

import (
	"context"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// Every connection of the pool plans each statement for its own
// arguments (customPlans).
func TestConnectionsPlanEachStatement(t *testing.T) {
	s, err := Open(context.Background(), Options{URL: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mode string
	if err := s.pool.QueryRow(context.Background(), `SHOW plan_cache_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "force_custom_plan" {
		t.Errorf("plan_cache_mode = %q, want force_custom_plan", mode)
	}
}
