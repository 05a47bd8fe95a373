package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

// A logical partition's latest-version change feed read from the
// partition's own items gives what the sequence's log gives for the
// partition's EPK: the same changes in the same order, page by page, from
// the beginning, from a time and from a position, through upserts,
// deletes, expiry and purges. And it reads about the partition, not the
// container.
func TestPartitionFeedFromItems(t *testing.T) {
	be := newBatchEnv(t, "-1")
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(3, 5))
	def := be.container(t).hashDefinition()
	const parts = 40
	write := func() {
		i := rnd.IntN(400)
		pk := "p" + strconv.Itoa(i%parts)
		ref := ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: partition.Key{partition.String(pk)}}
		switch op := rnd.IntN(10); {
		case op < 7:
			ttlProp := []string{"", "", `,"ttl":5`, `,"ttl":-1`}[rnd.IntN(4)]
			body := fmt.Sprintf(`{"id":"x%d","pk":"%s","v":%d%s}`, i, pk, rnd.IntN(1000), ttlProp)
			if _, err := be.e.WriteItem(ctx, WriteItemParams{ItemRef: ref, Mode: ModeUpsert, Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		case op < 9:
			_, err := be.e.DeleteItem(ctx, DeleteItemParams{ItemRef: ref, ID: "x" + strconv.Itoa(i)})
			var ee *Error
			if err != nil && !(errors.As(err, &ee) && ee.Code == NotFound) {
				t.Fatal(err)
			}
		default:
			be.clock.Advance(time.Duration(rnd.IntN(4)) * time.Second)
			if _, err := be.e.PurgeDue(ctx, ttl.PurgeParams{Container: "dbs/db/colls/c", Now: be.clock.Now(), Limit: 3}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// drain reads p page by page until a page comes back empty, and
	// returns the ids and LSNs it got, the records it read and where it
	// ended.
	drain := func(p ChangeFeedParams) (got []string, examined int, at FeedPosition) {
		t.Helper()
		for range 1000 {
			page, err := be.e.ChangeFeed(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			examined += page.Examined
			for _, it := range page.Items {
				doc, err := document.Parse(it)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, doc.Get("id").Str()+"@"+string(doc.Get("_lsn").JSON()))
			}
			p.Start, p.After = StartAfter, page.Position
			if len(page.Items) == 0 {
				return got, examined, page.Position
			}
		}
		t.Fatal("the feed does not end")
		return nil, 0, FeedPosition{}
	}
	var partAt, epkAt [parts]FeedPosition
	var started [parts]bool
	since := be.clock.Now()
	partRead, logRead := 0, 0
	for round := range 6 {
		for range 150 {
			write()
		}
		for k := range parts {
			if k%7 != round%7 {
				continue
			}
			key := partition.Key{partition.String("p" + strconv.Itoa(k))}
			epk, err := partition.EPK(def, key)
			if err != nil {
				t.Fatal(err)
			}
			byPart := ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "c", HasKey: true, PartitionKey: key}, MaxItemCount: 1 + rnd.IntN(5)}
			byEPK := ChangeFeedParams{ItemRef: ItemRef{DB: "db", Coll: "c"}, MinEPK: epk, MaxEPK: epk + "0", MaxItemCount: byPart.MaxItemCount}
			switch {
			case started[k]:
				byPart.Start, byPart.After = StartAfter, partAt[k]
				byEPK.Start, byEPK.After = StartAfter, epkAt[k]
			case round%2 == 1:
				byPart.Start, byPart.Since = StartTime, since
				byEPK.Start, byEPK.Since = StartTime, since
			}
			got, examined, at := drain(byPart)
			want, walked, atEPK := drain(byEPK)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d, partition p%d: by partition %v, by its EPK %v", round, k, got, want)
			}
			partRead, logRead = partRead+examined, logRead+walked
			partAt[k], epkAt[k], started[k] = at, atEPK, true
		}
	}
	t.Logf("read %d records by partition, %d by the log", partRead, logRead)
	// A partition holds about a fortieth of the items.
	if partRead*4 > logRead {
		t.Errorf("the partitions' feeds read %d records, the log walks for their EPKs %d", partRead, logRead)
	}
}
