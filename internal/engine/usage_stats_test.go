package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/partition"
)

// The statistics of a container's ranges count what its usage counts:
// items that have expired are gone from both at once, purged or not
// (ttl.md A3), and the ranges add up to the container.
func TestPartitionStatisticsLeaveOutExpiredItems(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"s","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1}`), &Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		ttl := ""
		if i%2 == 0 {
			ttl = `,"ttl":10`
		}
		pk := fmt.Sprintf("p%d", i)
		ref := ItemRef{DB: "db", Coll: "s", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}
		body := fmt.Sprintf(`{"id":"x%d","pk":"%s"%s}`, i, pk, ttl)
		if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	sums := func() (n, size int64, ranges int) {
		t.Helper()
		stats, err := be.e.PartitionStatistics(ctx, "db", "s")
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range stats {
			n, size = n+st.DocumentCount, size+st.SizeBytes
		}
		return n, size, len(stats)
	}
	if n, _, ranges := sums(); n != 40 || ranges < 2 {
		t.Fatalf("before expiry: %d items over %d ranges, want 40 over several", n, ranges)
	}
	be.clock.Advance(20 * time.Second)
	_, usage, err := be.e.ReadContainer(ctx, "db", "s")
	if err != nil {
		t.Fatal(err)
	}
	n, size, _ := sums()
	if n != 20 || usage.DocumentsCount != 20 || size != usage.DocumentsSize {
		t.Errorf("after expiry: statistics %d items, %d bytes; usage %d items, %d bytes; want 20 items each and the same bytes",
			n, size, usage.DocumentsCount, usage.DocumentsSize)
	}
}
