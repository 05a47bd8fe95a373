package engine

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// BenchmarkIDList: the query the SDKs' ReadMany sends for ten ids of one
// partition key (c.pk = 'q0' AND c.id IN (…)), in a container of 10⁵
// items whose logical partitions hold 100 or 1,000 of them. With the ids
// read by their entries (choose.go, pointIDs), it costs ten point reads
// whatever the partition holds.
//
//	go test -run '^$' -bench BenchmarkIDList -benchtime 2000x ./internal/engine/
func BenchmarkIDList(b *testing.B) {
	const n = 100_000
	for _, per := range []int{100, 1000} {
		b.Run("partition="+strconv.Itoa(per), func(b *testing.B) {
			s := openBenchEngine(b, clock.Real{}, nil, "null")
			s.loadInterleaved(b, n, n/per, nil)
			s.settle(b)
			// Ten items of partition q0, ids x0, x(n/per), …
			var ids []string
			for k := range 10 {
				ids = append(ids, "'x"+strconv.Itoa(k*7*(n/per))+"'")
			}
			p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: benchColl}, RangeID: "0", CrossPartition: true, MaxItemCount: 100,
				Query: "SELECT * FROM c WHERE c.pk = 'q0' AND c.id IN (" + strings.Join(ids, ", ") + ")"}
			firstPage(b, s, p, 10)
		})
	}
}
