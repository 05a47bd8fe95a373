package engine

// Benchmarks of server-side scripts, on durable Pebble as in production
// (docs/benchmarks.md): what calling a stored procedure costs over a
// point operation, and a 100-document bulk import by one procedure call
// against 100 single creates.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/partition"
)

func benchProcedures(b *testing.B) (*benchStore, ItemRef) {
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	ctx := context.Background()
	for id, src := range map[string]string{
		"empty": `function () {}`,
		"bulk": `function (docs) {
			var c = getContext().getCollection(), n = 0;
			for (; n < docs.length; n++) if (!c.createDocument(c.getSelfLink(), docs[n])) break;
			getContext().getResponse().setBody(n);
		}`,
	} {
		if _, err := s.WriteScript(ctx, benchDB, benchColl, StoredProcedures, "", benchParse(b, fmt.Sprintf(`{"id":%q,"body":%q}`, id, src)), ""); err != nil {
			b.Fatal(err)
		}
	}
	return s, ItemRef{DB: benchDB, Coll: benchColl, HasKey: true, PartitionKey: partition.Key{partition.String("p")}}
}

func BenchmarkProcedureCall(b *testing.B) {
	s, ref := benchProcedures(b)
	ctx := context.Background()
	b.Run("empty procedure", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.ExecuteProcedure(ctx, ExecuteParams{ItemRef: ref, ID: "empty"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	if _, err := s.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeUpsert, Body: []byte(`{"id":"x","pk":"p"}`)}); err != nil {
		b.Fatal(err)
	}
	b.Run("point read", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.ReadItem(ctx, ReadItemParams{ItemRef: ref, ID: "x"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBulkImport writes 100 documents per iteration: in one call of a
// bulk-import procedure (one transaction), or in 100 creates.
func BenchmarkBulkImport(b *testing.B) {
	s, ref := benchProcedures(b)
	ctx := context.Background()
	docs := func(round int) []string {
		out := make([]string, 100)
		for i := range out {
			out[i] = fmt.Sprintf(`{"id":"r%d-%d","pk":"p","n":%d,"payload":"%s"}`, round, i, i, strings.Repeat("x", 200))
		}
		return out
	}
	round := 0
	b.Run("procedure", func(b *testing.B) {
		for b.Loop() {
			round++
			res, err := s.ExecuteProcedure(ctx, ExecuteParams{ItemRef: ref, ID: "bulk", Params: []byte("[[" + strings.Join(docs(round), ",") + "]]")})
			if err != nil {
				b.Fatal(err)
			}
			if string(res.Body) != "100" {
				b.Fatalf("imported %s", res.Body)
			}
		}
		b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "docs/s")
	})
	b.Run("single creates", func(b *testing.B) {
		for b.Loop() {
			round++
			for _, d := range docs(round) {
				if _, err := s.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeCreate, Body: []byte(d)}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "docs/s")
	})
}
