package engine

import (
	"context"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/query/plan"
)

// The tests of an index that serves queries the scan answers too (stored
// vectors, stored words) run them on pairs of containers that hold the
// same items, one with the index and one without, and require the same
// pages: a container of one range ("c", "plain"), of four ("wide",
// "plainwide"), and with a hierarchical key on /pk and /k ("hpk",
// "plainhpk").

// runSeeds runs fn for env+"_SEEDS" seeds (default 4) from env+"_FROM"
// (default 0).
func runSeeds(t *testing.T, env string, fn func(t *testing.T, seed int64)) {
	seeds, from := int64(4), int64(0)
	for name, v := range map[string]*int64{env + "_SEEDS": &seeds, env + "_FROM": &from} {
		if s := os.Getenv(name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", name, s, err)
			}
			*v = n
		}
	}
	for seed := from; seed < from+seeds; seed++ {
		t.Run(strconv.FormatInt(seed, 10), func(t *testing.T) { fn(t, seed) })
	}
}

// pairedColls are the pairs' containers, each with whether it has the
// index under test.
var pairedColls = map[string]bool{"c": true, "plain": false, "wide": true, "plainwide": false, "hpk": true, "plainhpk": false}

// newPairedEnv creates the pairs' containers: def is a container's
// definition, with the index under test or without.
func newPairedEnv(t *testing.T, def func(id string, indexed bool) string) *batchEnv {
	be := newBatchEnvWith(t, def("c", true))
	for _, id := range []string{"plain", "wide", "plainwide", "hpk", "plainhpk"} {
		var tp *Throughput
		if strings.HasSuffix(id, "wide") {
			tp = &Throughput{Manual: 24000} // four ranges
		}
		body := def(id, pairedColls[id])
		if strings.HasSuffix(id, "hpk") {
			// A hierarchical key, whose first component alone is a
			// prefix of several logical partitions.
			body = strings.Replace(body, `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"paths":["/pk","/k"],"kind":"MultiHash","version":2}`, 1)
		}
		if _, err := be.e.CreateContainer(context.Background(), "db", batchJSON(t, body), tp); err != nil {
			t.Fatal(err)
		}
	}
	return be
}

// writePaired writes doc to every container of the pairs.
func writePaired(t *testing.T, be *batchEnv, mode WriteMode, doc string) {
	t.Helper()
	for coll := range pairedColls {
		if _, err := be.e.WriteItem(context.Background(), WriteItemParams{ItemRef: ItemRef{DB: "db", Coll: coll}, Mode: mode, Body: []byte(doc)}); err != nil {
			t.Fatalf("%s in %s: %v", doc, coll, err)
		}
	}
}

// changePaired replaces or deletes n of the items docs holds (item i made
// by item(i), with properties pk and k), in every container: a third are
// replaced by a new item(i) under the same key, the rest deleted.
func changePaired(t *testing.T, be *batchEnv, rng *rand.Rand, docs []string, n int, item func(i int) string) {
	for range n {
		i := rng.Intn(len(docs))
		v := batchJSON(t, docs[i])
		pk, k := v.Get("pk").Str(), v.Get("k").Float()
		if rng.Intn(3) == 0 {
			next := batchJSON(t, item(i)).With("pk", document.Str(pk)).With("k", document.Float(k))
			docs[i] = string(next.AppendJSON(nil))
			writePaired(t, be, ModeUpsert, docs[i])
			continue
		}
		for coll := range pairedColls {
			key := partition.Key{partition.String(pk)}
			if strings.HasSuffix(coll, "hpk") {
				key = append(key, partition.Number(k))
			}
			_, err := be.e.DeleteItem(context.Background(), DeleteItemParams{ItemRef: ItemRef{DB: "db", Coll: coll, HasKey: true, PartitionKey: key}, ID: "i" + strconv.Itoa(i)})
			if err != nil && !isNotFound(err) {
				t.Fatal(err)
			}
		}
	}
}

// drainPaired drains p's query (p.Coll is ignored) in each pair, in
// partition pk when it is not empty, else in each range, and requires the
// same rows with the index as without; it calls check with each drain
// with the index, its first page's access path and scope.
func drainPaired(t *testing.T, be *batchEnv, seed int64, p QueryParams, pk string, check func(coll string, access plan.Access, kind plan.ScopeKind)) {
	t.Helper()
	for _, pair := range [][2]string{{"c", "plain"}, {"wide", "plainwide"}, {"hpk", "plainhpk"}} {
		ranges := 1
		if pair[0] == "wide" && pk == "" {
			ranges = 4
		}
		for r := range ranges {
			p.ItemRef = ItemRef{DB: "db", Coll: pair[0]}
			p.RangeID, p.CrossPartition = "", false
			if pk != "" {
				p.ItemRef.HasKey, p.ItemRef.PartitionKey = true, partition.Key{partition.String(pk)}
			} else {
				p.RangeID, p.CrossPartition = strconv.Itoa(r), true
			}
			got, access, kind := drainVectorRows(t, be.e, p)
			p.ItemRef.Coll = pair[1]
			want, _, _ := drainVectorRows(t, be.e, p)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d, %s, key %q, range %d, %d a page: %s %v\n got %v\nwant %v", seed, pair[0], pk, r, p.MaxItemCount, p.Query, p.Params, got, want)
			}
			check(pair[0], access, kind)
		}
	}
}
