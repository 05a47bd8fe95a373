package engine

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
)

// BenchmarkScopedCost shows that work scoped to part of a container costs
// what that part holds, not what the container holds: logical partitions
// stay at 100 items while the container grows, and every sub-benchmark's
// ns/op, records/op and entries/op should be flat across the sizes.
//
//   - range-in-partition: SELECT * FROM c WHERE c.n > 10 with the partition
//     key given (89 rows), every page drained
//   - read-container: ReadContainer, whose usage comes from counters
//   - feed-partition: a read feed of one partition key, every page
//   - count-partition: SELECT VALUE COUNT(1) FROM c in one partition
//   - top10-cross: SELECT TOP 10 c.n FROM c ORDER BY c.n DESC over the range
//   - drain-page: one page of 100 of SELECT * FROM c over the range, at a
//     random position of the whole drain (the cost of page k)
//
// Sizes: 10³, 10⁴ and 10⁵ items; MAYFLY_BENCH_SCOPED_MAX=1000000 adds 10⁶.
//
//	go test -run '^$' -bench BenchmarkScopedCost -benchtime 2000x ./internal/engine/
func BenchmarkScopedCost(b *testing.B) {
	sizes := []int{1_000, 10_000, 100_000}
	if os.Getenv("MAYFLY_BENCH_SCOPED_MAX") == "1000000" {
		sizes = append(sizes, 1_000_000)
	}
	const per = 100
	for _, n := range sizes {
		b.Run("items="+strconv.Itoa(n), func(b *testing.B) {
			s := openBenchEngine(b, clock.Real{}, nil, "null")
			s.pk = func(i int) string { return "q" + strconv.Itoa(i/per) }
			s.load(b, 0, n, func(i int) []byte {
				return []byte(`{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i/per) + `","n":` + strconv.Itoa(i%per) + `,"payload":"` + benchPayload + `"}`)
			})
			s.settle(b)
			ctx := context.Background()
			parts := n / per
			ref := func() ItemRef {
				return ItemRef{DB: benchDB, Coll: benchColl, HasKey: true, PartitionKey: partition.Key{partition.String("q" + strconv.Itoa(rand.IntN(parts)))}}
			}
			report := func(b *testing.B, records, entries int) {
				b.ReportMetric(float64(records)/float64(b.N), "records/op")
				b.ReportMetric(float64(entries)/float64(b.N), "entries/op")
			}
			query := func(b *testing.B, p QueryParams, drain bool) (int, int) {
				records, entries := 0, 0
				for {
					page, err := s.QueryItems(ctx, p)
					if err != nil {
						b.Fatal(err)
					}
					records, entries = records+page.Examined, entries+page.IndexEntries
					if !drain || page.Continuation == "" {
						return records, entries
					}
					p.Continuation = page.Continuation
				}
			}
			b.Run("range-in-partition", func(b *testing.B) {
				records, entries := 0, 0
				for b.Loop() {
					r, e := query(b, QueryParams{ItemRef: ref(), Query: "SELECT * FROM c WHERE c.n > 10", MaxItemCount: 100}, true)
					records, entries = records+r, entries+e
				}
				report(b, records, entries)
			})
			b.Run("read-container", func(b *testing.B) {
				for b.Loop() {
					if _, _, err := s.ReadContainer(ctx, benchDB, benchColl); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("feed-partition", func(b *testing.B) {
				records := 0
				for b.Loop() {
					p := FeedParams{ItemRef: ref(), MaxItemCount: 100}
					for {
						page, err := s.ReadFeed(ctx, p)
						if err != nil {
							b.Fatal(err)
						}
						records += page.Examined
						if page.Continuation == "" {
							break
						}
						p.Continuation = page.Continuation
					}
				}
				report(b, records, 0)
			})
			b.Run("count-partition", func(b *testing.B) {
				records, entries := 0, 0
				for b.Loop() {
					r, e := query(b, QueryParams{ItemRef: ref(), Query: "SELECT VALUE COUNT(1) FROM c"}, false)
					records, entries = records+r, entries+e
				}
				report(b, records, entries)
			})
			b.Run("top10-cross", func(b *testing.B) {
				records, entries := 0, 0
				for b.Loop() {
					r, e := query(b, QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: "SELECT TOP 10 c.n FROM c ORDER BY c.n DESC", RangeID: "0", CrossPartition: true}, false)
					records, entries = records+r, entries+e
				}
				report(b, records, entries)
			})
			b.Run("drain-page", func(b *testing.B) {
				// The continuation of every page of the drain, then pages
				// read from random ones of them.
				var conts []string
				p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Query: "SELECT * FROM c", RangeID: "0", CrossPartition: true, MaxItemCount: 100}
				for {
					page, err := s.QueryItems(ctx, p)
					if err != nil {
						b.Fatal(err)
					}
					if page.Continuation == "" {
						break
					}
					conts = append(conts, page.Continuation)
					p.Continuation = page.Continuation
				}
				records, entries := 0, 0
				for b.Loop() {
					p.Continuation = conts[rand.IntN(len(conts))]
					r, e := query(b, p, false)
					records, entries = records+r, entries+e
				}
				report(b, records, entries)
			})
		})
	}
}
