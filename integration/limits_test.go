package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/server"
)

// tickClock moves on by step every time it is read once armed, so a
// query's page time runs out after a counted number of looks at the
// clock, however fast the machine is. Its timers never fire.
type tickClock struct {
	mu    sync.Mutex
	now   time.Time
	step  time.Duration
	armed bool
}

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now
	if c.armed {
		c.now = c.now.Add(c.step)
	}
	return now
}

func (c *tickClock) After(time.Duration) <-chan time.Time { return make(chan time.Time) }

func (c *tickClock) arm(step time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.step = true, step
}

// A query whose documents each cost a good part of the page time is
// served in several short pages, each ended early with a continuation as
// the service does, and the SDK's pager drains all of it, in order.
func TestQueryPagesEndAtTheirTimeThroughTheSDK(t *testing.T) {
	clk := &tickClock{now: time.Now()}
	e := start(t, func(cfg *server.Config) { cfg.Clock = clk })
	c := e.container(e.database("limits"), azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	ctx := context.Background()
	nums := make([]string, 500)
	for i := range nums {
		nums[i] = fmt.Sprint(i)
	}
	pk := azcosmos.NewPartitionKeyString("a")
	for i := 0; i < 6; i++ {
		doc := fmt.Sprintf(`{"id":"%d","pk":"a","a":[%s]}`, i, strings.Join(nums, ","))
		if _, err := c.CreateItem(ctx, pk, []byte(doc), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Each look at the clock is a second: a page (5 s) ends within its
	// first few documents.
	clk.arm(time.Second)
	pager := c.NewQueryItemsPager("SELECT VALUE c.id FROM c WHERE ARRAY_LENGTH(ARRAY(SELECT VALUE x FROM x IN c.a WHERE x >= 0)) > 0", pk, nil)
	var ids []string
	pages := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		for _, it := range page.Items {
			ids = append(ids, string(it))
		}
		if pages > 20 {
			t.Fatal("the query makes no progress")
		}
	}
	if got := strings.Join(ids, ","); got != `"0","1","2","3","4","5"` || pages < 2 {
		t.Errorf("%d pages with %s; want every row in order over pages cut short by their time", pages, got)
	}
}
