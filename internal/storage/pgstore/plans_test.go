package pgstore

import (
	"context"
	"fmt"

	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// Every connection of the pool plans each statement for its own arguments,
// never with a sequential scan where an index scan will do, and never in
// parallel (planSettings).
func TestConnectionsPlanEachStatement(t *testing.T) {
	s, err := Open(context.Background(), Options{URL: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for setting, want := range map[string]string{
		"plan_cache_mode":                 "force_custom_plan",
		"enable_seqscan":                  "off",
		"max_parallel_workers_per_gather": "0",
	} {
		var got string
		if err := s.pool.QueryRow(context.Background(), `SHOW `+setting).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
}

// Autovacuum may analyze the table just after a dropped container's rows
// were deleted: many pages, a handful of rows. Planned on those
// statistics once the table has filled again, the prefetch of a point
// operation scanned the whole table, or started parallel workers, for a
// few keys: 10 times the server's CPU per operation, until the next
// analysis. Through the store's connections it uses the primary key alone.
func TestPrefetchKeepsToTheIndexOnStaleStatistics(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s, err := Open(ctx, Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "k%060d", i) }
	fill := func(from, to int) {
		exec(`INSERT INTO mayfly_kv (k, v) SELECT convert_to('k' || lpad(i::text, 60, '0'), 'UTF8'), convert_to('v', 'UTF8') FROM generate_series($1::int, $2::int) i`, from, to)
	}
	fill(0, 59_999)
	fill(90_000_000, 90_000_003) // survivors at the end of the heap
	exec(`DELETE FROM mayfly_kv WHERE k < $1`, key(90_000_000))
	exec(`VACUUM ANALYZE mayfly_kv`)
	fill(100_000, 159_999)
	keys := [][]byte{key(100_005), key(150_000), key(90_000_001)}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// What the server plans for the statement as the store sends it.
	rows, err := conn.Query(ctx, "EXPLAIN "+prefetchSQL, pgx.QueryExecModeExec, keys, [][]byte{}, [][]byte{})
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if strings.Contains(text, "Seq Scan on mayfly_kv") || strings.Contains(text, "Gather") {
		t.Errorf("the prefetch is planned to read more than its keys:\n%s", text)
	}
}
