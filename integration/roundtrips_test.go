package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// A point operation through a gateway over PostgreSQL costs at most two
// round trips to the database, and a query by id three: every wasted read
// there is network latency in the user's request. The figure is the
// gateway's own counter of statements and batches sent, over n operations
// of each kind; it also counts the gateway's background work, such as
// trimming the change feed's version log after writes (a round trip or
// two per batch of writes), which the allowance covers.
func TestRoundTripsPerPointOperation(t *testing.T) {
	gw := gateways(t, 1)[0]
	ctx := context.Background()
	db := gw.database("db")
	c := gw.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pk := azcosmos.NewPartitionKeyString("p")
	const n = 40
	const allowance = 0.25
	item := func(i, v int) []byte { return mustJSON(t, gwItem{ID: fmt.Sprint("i", i), PK: "p", N: v}) }
	// Warm the gateway's caches (container record, partition map) first.
	if _, err := c.CreateItem(ctx, pk, item(-1, 0), nil); err != nil {
		t.Fatal(err)
	}
	query := func(i int) error {
		pager := c.NewQueryItemsPager("SELECT * FROM c WHERE c.id = @id", pk,
			&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: fmt.Sprint("i", i)}}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return err
			}
			if len(page.Items) != 1 {
				return fmt.Errorf("%d items", len(page.Items))
			}
		}
		return nil
	}
	ops := []struct {
		name   string
		op     func(i int) error
		budget float64
	}{
		{"create", func(i int) error { _, err := c.CreateItem(ctx, pk, item(i, 0), nil); return err }, 2},
		{"read", func(i int) error { _, err := c.ReadItem(ctx, pk, fmt.Sprint("i", i), nil); return err }, 2},
		// A query's first round trip carries the clock and the container,
		// the second the id entry and the record, the third ends it.
		{"query by id", query, 3},
		{"replace", func(i int) error { _, err := c.ReplaceItem(ctx, pk, fmt.Sprint("i", i), item(i, 1), nil); return err }, 2},
		{"upsert", func(i int) error { _, err := c.UpsertItem(ctx, pk, item(i, 2), nil); return err }, 2},
		{"patch", func(i int) error {
			p := azcosmos.PatchOperations{}
			p.AppendIncrement("/n", 1)
			_, err := c.PatchItem(ctx, pk, fmt.Sprint("i", i), p, nil)
			return err
		}, 2},
		{"delete", func(i int) error { _, err := c.DeleteItem(ctx, pk, fmt.Sprint("i", i), nil); return err }, 2},
	}
	// The gateway's loops (the index builder, the purger, the erasure)
	// make a burst of round trips now and then: one of nine fell among 40
	// upserts under the race detector. The operations make the same round
	// trips each time, so each kind is measured over three sets of items
	// and judged by its fewest.
	const counter = "mayfly_postgres_round_trips_total"
	fewest := make([]float64, len(ops))
	for set := range 3 {
		for k, o := range ops {
			before := gw.metrics(t)[counter]
			for i := range n {
				if err := o.op(set*n + i); err != nil {
					t.Fatalf("%s %d: %v", o.name, set*n+i, err)
				}
			}
			per := (gw.metrics(t)[counter] - before) / n
			t.Logf("%s: %.2f round trips per operation", o.name, per)
			if set == 0 || per < fewest[k] {
				fewest[k] = per
			}
		}
	}
	for k, o := range ops {
		if fewest[k] > o.budget+allowance {
			t.Errorf("%s: %.2f round trips per operation, want at most %.0f", o.name, fewest[k], o.budget)
		}
	}
}

// Sixteen clients creating into one container through one gateway over
// PostgreSQL have their writes committed together (group commit), and the
// gateway's metrics say so: every create is counted once among the grouped
// writes, in fewer transactions than creates.
func TestConcurrentCreatesCommitInGroups(t *testing.T) {
	gw := gateways(t, 1)[0]
	ctx := context.Background()
	db := gw.database("db")
	c := gw.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	const clients, each = 16, 20
	before := gw.metrics(t)
	errs := make(chan error, clients)
	for w := range clients {
		go func() {
			for i := range each {
				id := fmt.Sprint("w", w, "-", i)
				pk := azcosmos.NewPartitionKeyString(fmt.Sprint("p", i%4))
				if _, err := c.CreateItem(ctx, pk, mustJSON(t, gwItem{ID: id, PK: fmt.Sprint("p", i%4)}), nil); err != nil {
					errs <- fmt.Errorf("create %s: %w", id, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	after := gw.metrics(t)
	writes := after["mayfly_grouped_writes_total"] - before["mayfly_grouped_writes_total"]
	groups := after["mayfly_write_groups_total"] - before["mayfly_write_groups_total"]
	t.Logf("%.0f creates in %.0f transactions", writes, groups)
	if writes != clients*each {
		t.Errorf("%.0f grouped writes counted, want %d", writes, clients*each)
	}
	if groups >= writes {
		t.Errorf("%.0f transactions for %.0f creates: none were committed together", groups, writes)
	}
}
