package engine

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
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
			be.churn(t, "c", rnd, 400, parts, nil)
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
