package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/jackc/pgx/v5"

	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// purgeLeaseOwner returns the owner ("host/pid/random") of the purge lease
// of the one container in the database at url, "" while there is none.
func purgeLeaseOwner(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v []byte
	err = conn.QueryRow(ctx, `SELECT v FROM mayfly_kv WHERE substring(k from 1 for 2) = '\x7970'::bytea`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal(v, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Owner
}

func ownedBy(owner string, p *mayflyProcess) bool {
	parts := strings.Split(owner, "/")
	return len(parts) == 3 && parts[1] == strconv.Itoa(p.cmd.Process.Pid)
}

// leaseBound is how soon after a holder dies another gateway has taken its
// purge over: one lease term (3 s), one rescan of the container list over
// a shared store (2 s), one purger pass, and slack for a loaded machine.
const leaseBound = 7 * time.Second

// A gateway killed (SIGKILL) while it purges and serves writes loses no
// acknowledged write; the other gateway goes on serving, takes the purge
// over within leaseBound, and every expired item is deleted once and
// reported once in the all-versions change feed.
func TestGatewayKilledMidLoad(t *testing.T) {
	url := pgtest.URL(t)
	bin := buildMayfly(t)
	a := startProcess(t, bin, t.TempDir(), "--postgres", url)
	ea := connect(t, a)
	if r := ea.do("POST", "/dbs", []byte(`{"id":"db"}`), nil); r.status != 201 {
		t.Fatalf("create database: %d %s", r.status, r.body)
	}
	if r := ea.do("POST", "/dbs/db/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash"},"defaultTtl":-1,"changeFeedPolicy":{"retentionDuration":60}}`), nil); r.status != 201 {
		t.Fatalf("create container: %d %s", r.status, r.body)
	}
	ca := containerOn(t, ea, "db", "c")
	// a purges first, so it holds the lease when it dies.
	if _, err := ca.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"warm","pk":"p","ttl":1}`), nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); !ownedBy(purgeLeaseOwner(t, url), a); {
		if time.Now().After(deadline) {
			t.Fatalf("gateway a never took the purge lease; owner %q", purgeLeaseOwner(t, url))
		}
		time.Sleep(50 * time.Millisecond)
	}
	b := startProcess(t, bin, t.TempDir(), "--postgres", url)
	eb := connect(t, b)
	cb := containerOn(t, eb, "db", "c")

	// Writers through both gateways: items that expire after 1 s, and
	// items that never do.
	var mu sync.Mutex
	acked := map[string]bool{"warm": true} // id → has a ttl
	tried := map[string]bool{"warm": true}
	var wg sync.WaitGroup
	load, stopLoad := context.WithCancel(context.Background())
	writer := func(name string, c *azcosmos.ContainerClient) {
		defer wg.Done()
		for i := 0; load.Err() == nil; i++ {
			id := fmt.Sprintf("%s-%d", name, i)
			expires := i%2 == 0
			body := fmt.Sprintf(`{"id":%q,"pk":"p%d"}`, id, i%4)
			if expires {
				body = fmt.Sprintf(`{"id":%q,"pk":"p%d","ttl":1}`, id, i%4)
			}
			mu.Lock()
			tried[id] = expires
			mu.Unlock()
			rctx, cancel := context.WithTimeout(load, 10*time.Second)
			_, err := c.CreateItem(rctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", i%4)), []byte(body), nil)
			cancel()
			if err != nil {
				if strings.HasPrefix(name, "a") {
					return // its gateway is dead
				}
				if load.Err() == nil {
					t.Errorf("write %s through the surviving gateway: %v", id, err)
				}
				return
			}
			mu.Lock()
			acked[id] = expires
			mu.Unlock()
		}
	}
	for i := range 2 {
		wg.Add(2)
		go writer(fmt.Sprintf("a%d", i), ca)
		go writer(fmt.Sprintf("b%d", i), cb)
	}
	time.Sleep(1500 * time.Millisecond)
	a.kill(t)
	killed := time.Now()
	// b goes on serving; then the load stops, since under a load that
	// leaves no spare capacity the purge yields to it (ttl.md A4), which
	// would hide the take-over time.
	time.Sleep(500 * time.Millisecond)
	stopLoad()
	wg.Wait()
	var took time.Duration
	for {
		if ownedBy(purgeLeaseOwner(t, url), b) {
			took = time.Since(killed)
			break
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("gateway b did not take the purge over within 30 s; owner %q", purgeLeaseOwner(t, url))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("gateway b took the purge over %v after gateway a was killed", took.Round(10*time.Millisecond))
	if took > leaseBound {
		t.Errorf("take-over after %v, more than the bound %v", took, leaseBound)
	}

	// Every acknowledged item is there (or, with a ttl, was there and
	// expired); every expired one is purged once and reported once.
	nExpiring := 0
	for id, expires := range acked {
		if expires {
			nExpiring++
			continue
		}
		if _, err := cb.ReadItem(ctx, azcosmos.NewPartitionKeyString(pkOf(id)), id, nil); err != nil {
			t.Errorf("acknowledged %s: %v", id, err)
		}
	}
	var expiries map[string]int
	for deadline := time.Now().Add(20 * time.Second); ; {
		recs, _ := eb.drain(t, "c", true, "", nil)
		expiries = map[string]int{}
		for _, r := range recs {
			if m := meta(r); m["timeToLiveExpired"] == true {
				expiries[m["id"].(string)]++
			}
		}
		missing := 0
		for id, expires := range acked {
			if expires && expiries[id] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged expiring items have no expiry record 20 s on", missing, nExpiring)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for id, n := range expiries {
		if n != 1 {
			t.Errorf("%s: %d expiry records, want 1", id, n)
		}
		if !tried[id] {
			t.Errorf("%s: an expiry record for an item never written with a ttl", id)
		}
	}
	t.Logf("%d items acknowledged, %d of them expired and purged once each", len(acked), nExpiring)
}

// pkOf is the partition key the writers of TestGatewayKilledMidLoad gave
// item id ("name-i" → "p(i%4)"), and "p" for the warm-up item.
func pkOf(id string) string {
	_, n, ok := strings.Cut(id, "-")
	if !ok {
		return "p"
	}
	i, _ := strconv.Atoi(n)
	return fmt.Sprintf("p%d", i%4)
}

// PostgreSQL restarted under load: requests in flight fail with a status
// the SDKs retry (503, 408, 449), never a 500 and never a hang; the gateway
// reconnects by itself, and no acknowledged write is lost.
func TestPostgresRestartMidLoad(t *testing.T) {
	e := gateways(t, 1)[0]
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})

	var mu sync.Mutex
	var acked []string
	statuses := map[int]int{}
	var lastOK time.Time
	load, stopLoad := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; load.Err() == nil; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				rctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				start := time.Now()
				var err error
				if i%3 == 2 {
					_, err = c.ReadItem(rctx, azcosmos.NewPartitionKeyString("p"), fmt.Sprintf("w%d-%d", w, i-1), nil)
				} else {
					_, err = c.CreateItem(rctx, azcosmos.NewPartitionKeyString("p"), []byte(fmt.Sprintf(`{"id":%q,"pk":"p"}`, id)), nil)
				}
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					if i%3 != 2 {
						acked = append(acked, id)
					}
					lastOK = time.Now()
				case errors.Is(err, context.DeadlineExceeded):
					t.Errorf("a request hung for %v", time.Since(start).Round(time.Second))
				default:
					statuses[statusOf(err)]++
					if s := statusOf(err); s != 503 && s != 408 && s != 449 && s != 404 {
						t.Errorf("%s: %v", id, err)
					}
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	pgtest.Restart(t, 2*time.Second)
	restarted := time.Now()
	time.Sleep(3 * time.Second)
	stopLoad()
	wg.Wait()
	t.Logf("failures by status: %v; %d writes acknowledged", statuses, len(acked))
	if statuses[503]+statuses[408]+statuses[449] == 0 {
		t.Error("no request failed while PostgreSQL was down: did it restart?")
	}
	if !lastOK.After(restarted) {
		t.Fatal("no request succeeded after PostgreSQL came back: the gateway did not reconnect")
	}
	for _, id := range acked {
		if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"), id, nil); err != nil {
			t.Errorf("acknowledged %s: %v", id, err)
		}
	}
}

// A gateway whose PostgreSQL cannot be reached at start says so and exits
// with a non-zero status, rather than serving errors or waiting forever.
func TestPostgresUnreachableAtStart(t *testing.T) {
	bin := buildMayfly(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--data-dir", t.TempDir(), "--addr", freeAddr(t), "--metrics-addr", freeAddr(t),
		"--postgres", "postgres://mayfly@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 || ctx.Err() != nil {
		t.Fatalf("mayfly with an unreachable PostgreSQL: %v (want a non-zero exit)\n%s", err, out)
	}
	if !strings.Contains(string(out), "cannot reach PostgreSQL") {
		t.Fatalf("the error does not say what is wrong:\n%s", out)
	}
}
