package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// An etag keeps the spelling it always had: clients compare them as
// strings, and a store's etags must not change with the server's version.
func TestEtagSpelling(t *testing.T) {
	cases := []struct {
		rid  []byte
		lsn  uint64
		want string
	}{
		{nil, 0, `"811c9dc5-0000-0000-0000-000000000000"`},
		{[]byte{1, 2, 3, 4}, 1, `"5734a87d-0000-0000-0000-000000000001"`},
		{[]byte("abc"), 1<<48 | 0xabcdef, `"1a47e90b-0000-0000-0001-000000abcdef"`},
		{[]byte("abc"), ^uint64(0), `"1a47e90b-0000-0000-ffff-ffffffffffff"`},
	}
	for _, c := range cases {
		if got := etagFor(c.rid, c.lsn); got != c.want {
			t.Errorf("etagFor(%x, %d) = %s, want %s", c.rid, c.lsn, got, c.want)
		}
	}
	// And as fmt spells it, over random inputs.
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		rid := make([]byte, r.IntN(12))
		for i := range rid {
			rid[i] = byte(r.Uint32())
		}
		lsn := r.Uint64() >> r.IntN(64)
		var h uint32 = 2166136261
		for _, b := range rid {
			h = (h ^ uint32(b)) * 16777619
		}
		want := fmt.Sprintf("\"%08x-0000-0000-%04x-%012x\"", h, uint16(lsn>>48), lsn&0xffffffffffff)
		if got := etagFor(rid, lsn); got != want {
			t.Fatalf("etagFor(%x, %d) = %s, want %s", rid, lsn, got, want)
		}
	}
}

// An upsert's If-Match guards a replace only: an upsert of an item that
// does not exist creates it, whatever etag it names, alone and in a batch
// (azure-cosmos-dotnet-v3#1698); one of an item that exists with another
// etag is a 412.
func TestUpsertIfMatch(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	stale := `"00000000-0000-0000-0000-000000000001"`
	res, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(`["p"]`), Mode: ModeUpsert, IfMatch: stale, Body: []byte(`{"id":"a","pk":"p"}`)})
	if err != nil || !res.Created {
		t.Fatalf("upsert of a new item with If-Match: %+v, %v; want it created", res, err)
	}
	if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(`["p"]`), Mode: ModeUpsert, IfMatch: stale, Body: []byte(`{"id":"a","pk":"p","v":2}`)}); !isCode(err, PreconditionFailed) {
		t.Errorf("upsert of an existing item with another etag: %v, want 412", err)
	}
	if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: batchRef(`["p"]`), Mode: ModeUpsert, IfMatch: res.Etag, Body: []byte(`{"id":"a","pk":"p","v":3}`)}); err != nil {
		t.Errorf("upsert with the item's etag: %v", err)
	}
	out, err := be.run(t, `["p"]`, true, `[{"operationType":"Upsert","ifMatch":`+strconv.Quote(stale)+`,"resourceBody":{"id":"b","pk":"p"}}]`)
	if err != nil || outcomes(out) != "created" {
		t.Errorf("batch upsert of a new item with ifMatch: %v, %v; want created", out, err)
	}
}
