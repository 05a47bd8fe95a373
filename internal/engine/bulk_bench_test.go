package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// BenchmarkBulkBatch: a bulk (non-atomic) batch of 100 creates, as the
// SDKs' bulk modes send them, on a Pebble store on disk whose commits
// wait for the log's sync. "together" runs the batch in one transaction,
// each operation behind a savepoint; "apart" in a transaction an
// operation, as a store without savepoints does. The two alternate
// within a run:
//
//	go test -run '^$' -bench BenchmarkBulkBatch -count 5 ./internal/engine/
func BenchmarkBulkBatch(b *testing.B) {
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	ctx := context.Background()
	n := 0
	batch := func(parts int) []BatchOp {
		var ops []string
		for range 100 {
			n++
			ops = append(ops, fmt.Sprintf(`{"operationType":"Create","partitionKey":"[\"p%d\"]","resourceBody":{"id":"i%d","pk":"p%d","n":%d,"payload":"%s"}}`, n%parts, n, n%parts, n, benchPayload))
		}
		parsed, err := ParseBatch([]byte("[" + strings.Join(ops, ",") + "]"))
		if err != nil {
			b.Fatal(err)
		}
		return parsed
	}
	for _, parts := range []int{1, 10} {
		for _, mode := range []string{"apart", "together"} {
			b.Run(fmt.Sprintf("partitions=%d/%s", parts, mode), func(b *testing.B) {
				s.noSavepoints.Store(mode == "apart")
				defer s.noSavepoints.Store(false)
				for b.Loop() {
					b.StopTimer()
					ops := batch(parts)
					b.StartTimer()
					res, err := s.Batch(ctx, BatchParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, Ops: ops, ContinueOnError: true})
					if err != nil || res.Failed() {
						b.Fatalf("batch: %v %v", err, res)
					}
				}
			})
		}
	}
}
