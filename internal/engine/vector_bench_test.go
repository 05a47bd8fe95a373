package engine

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
)

// BenchmarkVectorSearch: the ten items nearest a query vector, as an
// application asks for them, in a container of items whose vectors have
// dims dimensions written as embeddings are (six decimals), in logical
// partitions of 100. Two containers hold the same items: "stored", with a
// vector index, whose searches read the stored vectors (vectors.go), and
// "scanned", with the same embedding policy and no vector index, whose
// searches score every document, as every search did before vectors
// were stored. Shapes: across the range; in one partition; across the
// range with a filter a tenth of the items pass.
//
//	go test -run '^$' -bench BenchmarkVectorSearch -benchtime 20x ./internal/engine/
func BenchmarkVectorSearch(b *testing.B) {
	for _, size := range []struct{ items, dims int }{{10_000, 256}, {2_000, 1536}} {
		b.Run("items="+strconv.Itoa(size.items)+"/dims="+strconv.Itoa(size.dims), func(b *testing.B) {
			s := openBenchEngine(b, clock.Real{}, nil, "null")
			ctx := context.Background()
			embed := `"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":` + strconv.Itoa(size.dims) + `,"distanceFunction":"cosine"}]}`
			for coll, policy := range map[string]string{
				"stored":  `"indexingPolicy":{"vectorIndexes":[{"path":"/v","type":"quantizedFlat"}]}`,
				"scanned": `"indexingPolicy":{}`,
			} {
				body := `{"id":"` + coll + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},` + embed + `,` + policy + `}`
				if _, err := s.CreateContainer(ctx, benchDB, benchParse(b, body), nil); err != nil {
					b.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			vec := func() string {
				var sb strings.Builder
				sb.WriteByte('[')
				for j := range size.dims {
					if j > 0 {
						sb.WriteByte(',')
					}
					sb.WriteString(strconv.FormatFloat(rng.Float64()*2-1, 'f', 6, 64))
				}
				return sb.String() + "]"
			}
			docs := make([]string, size.items)
			for i := range docs {
				docs[i] = `{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i/100) + `","k":` + strconv.Itoa(i%10) + `,"v":` + vec() + `}`
			}
			s.pk = func(i int) string { return "q" + strconv.Itoa(i/100) }
			s.block = 100
			for _, coll := range []string{"stored", "scanned"} {
				s.coll = coll
				s.load(b, 0, size.items, func(i int) []byte { return []byte(docs[i]) })
			}
			s.settle(b)
			qv := vec()
			key := partition.Key{partition.String("q" + strconv.Itoa(size.items/200))}
			for _, shape := range []struct {
				name, where string
				key         bool
			}{{"across", "", false}, {"partition", "", true}, {"filtered", " WHERE c.k = 3", false}} {
				for _, coll := range []string{"stored", "scanned"} {
					b.Run(shape.name+"/"+coll, func(b *testing.B) {
						p := QueryParams{ItemRef: ItemRef{DB: benchDB, Coll: coll}, MaxItemCount: 100,
							Query:  "SELECT TOP 10 c.id, VectorDistance(c.v, @v) AS score FROM c" + shape.where + " ORDER BY VectorDistance(c.v, @v)",
							Params: map[string]document.Value{"@v": benchParse(b, qv)}}
						if shape.key {
							p.HasKey, p.PartitionKey = true, key
						} else {
							p.RangeID, p.CrossPartition = "0", true
						}
						firstPage(b, s, p, 10)
					})
				}
			}
		})
	}
}

// BenchmarkVectorCreate: creates of items with a vector of 1,536
// dimensions, one at a time, synced, into a container whose vector index
// stores the vector apart ("stored") and into one without ("scanned"),
// both with the vector's path excluded from the range index, as the
// service advises. The stored vector is the cost of the faster search.
//
//	go test -run '^$' -bench BenchmarkVectorCreate -benchtime 500x ./internal/engine/
func BenchmarkVectorCreate(b *testing.B) {
	const dims = 1536
	s := openBenchEngine(b, clock.Real{}, nil, "null")
	ctx := context.Background()
	embed := `"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":1536,"distanceFunction":"cosine"}]}`
	for coll, vectors := range map[string]string{"stored": `,"vectorIndexes":[{"path":"/v","type":"quantizedFlat"}]`, "scanned": ""} {
		body := `{"id":"` + coll + `","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},` + embed +
			`,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/v/*"}]` + vectors + `}}`
		if _, err := s.CreateContainer(ctx, benchDB, benchParse(b, body), nil); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	sb.WriteByte('[')
	for j := range dims {
		if j > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatFloat(rng.Float64()*2-1, 'f', 6, 64))
	}
	vec := sb.String() + "]"
	for _, coll := range []string{"stored", "scanned"} {
		b.Run(coll, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				body := `{"id":"x` + strconv.Itoa(i) + `","pk":"q` + strconv.Itoa(i%50) + `","v":` + vec + `}`
				if _, err := s.WriteItem(ctx, WriteItemParams{ItemRef: ItemRef{DB: benchDB, Coll: coll}, Mode: ModeCreate, Body: []byte(body)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
