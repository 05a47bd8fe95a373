package integration

// Crash recovery: a real mayfly process is killed with SIGKILL while
// clients write and the purger deletes, then restarted on the same data
// directory. Every acknowledged write must be there with its last
// acknowledged version, or be expired by the rules; no expired item may be
// visible; and, read offline afterwards, the indexes must match the items
// exactly.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// mayflyProcess is a mayfly child process.
type mayflyProcess struct {
	cmd        *exec.Cmd
	url        string
	metricsURL string
	stderr     *bytes.Buffer // read only after the process has exited
	exited     chan struct{}
	err        error // of Wait, once exited is closed
}

// buildMayfly builds the mayfly command into a temporary directory. A
// test that runs it skips in short mode, which the race run uses: the
// detector instruments the test binary, not the command it starts.
func buildMayfly(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the built command in a process of its own; skipped in -short mode")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH, so mayfly cannot be built")
	}
	bin := filepath.Join(t.TempDir(), "mayfly")
	out, err := exec.Command(goCmd, "build", "-o", bin, "github.com/mayfly-db/mayfly/cmd/mayfly").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startProcess runs mayfly on dir and waits until it serves its
// certificate. The ports freeAddr found free may be taken by another
// process before mayfly binds them (tests of other packages run beside
// these), so a start that fails only for that is tried again on new ports.
func startProcess(t *testing.T, bin, dir string, args ...string) *mayflyProcess {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, err := tryStartProcess(t, bin, dir, args...)
		if err == nil {
			return p
		}
		if attempt == 5 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
}

func tryStartProcess(t *testing.T, bin, dir string, args ...string) (*mayflyProcess, error) {
	t.Helper()
	addr, metrics := freeAddr(t), freeAddr(t)
	p := &mayflyProcess{url: "https://" + addr + "/", metricsURL: "http://" + metrics + "/metrics", stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"--data-dir", dir, "--addr", addr, "--metrics-addr", metrics, "--log-level", "error"}, args...)...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-p.exited:
			return nil, fmt.Errorf("mayfly exited before it was ready: %v\n%s", p.err, p.stderr)
		default:
		}
		resp, err := hc.Get(p.url + "_explorer/emulator.pem")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mayfly not ready after 15 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to die.
func (p *mayflyProcess) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// stop asks the process to shut down and waits for a clean exit.
func (p *mayflyProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("mayfly did not stop within 15 s of SIGTERM")
	}
	if p.err != nil {
		t.Fatalf("mayfly exited with %v\n%s", p.err, p.stderr)
	}
}

// connect returns an env (SDK client and raw requests) for a server that
// runs elsewhere.
func connect(t *testing.T, p *mayflyProcess) *env {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	t.Cleanup(hc.CloseIdleConnections)
	cred, err := azcosmos.NewKeyCredential(emulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := azcosmos.NewClientWithKey(p.url, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: hc,
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close) // as in start
	return &env{t: t, url: p.url, metricsURL: p.metricsURL, client: client, http: hc}
}

// expiryRule is the TTL rule of one container of the crash test, from the
// client's side: the server's clock is the machine's, so expiry is judged
// against time.Now.
type expiryRule struct {
	defaultTTL int64 // 0: TTL off from the start
	// TTL was turned off at an instant in [off0, off1] (zero: never).
	off0, off1 time.Time
}

// due is the second at which a version written at ts expires, under the
// setting before any change, and false when it never does.
func (x expiryRule) due(ts int64, ttlField string) (int64, bool) {
	if x.defaultTTL == 0 {
		return 0, false
	}
	switch ttlField {
	case "":
		return ts + x.defaultTTL, true
	case "-1":
		return 0, false
	}
	n, err := strconv.ParseInt(ttlField, 10, 64)
	if err != nil {
		panic("test bug: ttl " + ttlField)
	}
	return ts + n, true
}

// mayHaveExpired reports whether a version written no earlier than second
// ts may be expired at t: its due second has come, and came before TTL was
// turned off (B1 keeps it expired afterwards).
func (x expiryRule) mayHaveExpired(ts int64, ttlField string, t time.Time) bool {
	d, ok := x.due(ts, ttlField)
	if !ok {
		return false
	}
	limit := t
	if !x.off1.IsZero() && x.off1.Before(limit) {
		limit = x.off1
	}
	return !time.Unix(d, 0).After(limit)
}

// mustHaveExpired reports whether a version written at second ts is
// certainly expired at t.
func (x expiryRule) mustHaveExpired(ts int64, ttlField string, t time.Time) bool {
	d, ok := x.due(ts, ttlField)
	if !ok {
		return false
	}
	limit := t
	if !x.off0.IsZero() && x.off0.Before(limit) {
		limit = x.off0
	}
	return !time.Unix(d, 0).After(limit)
}

// itemVersion is one state of an item as a client wrote it.
type itemVersion struct {
	exists bool   // false: deleted, or never written
	v      int    // the body's "v", increasing per item
	ttl    string // the item's ttl property as JSON, "" when absent
	ts     int64  // _ts, when acknowledged
	sent   time.Time
}

func (v itemVersion) String() string {
	if !v.exists {
		return fmt.Sprintf("absent after v%d", v.v)
	}
	return fmt.Sprintf("v%d ttl=%q _ts=%d sent=%s", v.v, v.ttl, v.ts, v.sent.Format("15:04:05.000"))
}

// trackedItem is everything the writers know of one item.
type trackedItem struct {
	coll, pk, id string
	acked        itemVersion  // the last acknowledged state
	pending      *itemVersion // a write without an answer when the process died
	gone         bool         // the server said it expired; write it anew
}

// candidates are the states the item may be in: the acknowledged one, or
// the one of a write whose answer was lost.
func (it *trackedItem) candidates() []itemVersion {
	out := []itemVersion{it.acked}
	if it.pending != nil {
		out = append(out, *it.pending)
	}
	return out
}

// crashRun is the state of one crash test.
type crashRun struct {
	t      *testing.T
	rules  map[string]*expiryRule
	killed time.Time
	dying  atomic.Bool // set just before the kill
	mu     sync.Mutex
	errs   int
}

func (r *crashRun) errorf(format string, args ...any) {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs++
	if r.errs <= 25 {
		r.t.Errorf(format, args...)
	}
}

// checkPresent checks a version of it that a read at [sent, …] showed.
func (r *crashRun) checkPresent(path string, it *trackedItem, body []byte, sent time.Time) {
	var d struct {
		V   int             `json:"v"`
		TS  int64           `json:"_ts"`
		TTL json.RawMessage `json:"ttl"`
	}
	if err := json.Unmarshal(body, &d); err != nil {
		r.errorf("%s: %s/%s: body %s: %v", path, it.coll, it.id, body, err)
		return
	}
	x := r.rules[it.coll]
	for i, c := range it.candidates() {
		if !c.exists || c.v != d.V {
			continue
		}
		if i == 0 && c.ts != d.TS {
			r.errorf("%s: %s/%s version %d has _ts %d, acknowledged with %d", path, it.coll, it.id, d.V, d.TS, c.ts)
		}
		if i == 1 && (d.TS < c.sent.Unix() || d.TS > r.killed.Unix()) {
			r.errorf("%s: %s/%s unacknowledged version %d has _ts %d outside its write's time", path, it.coll, it.id, d.V, d.TS)
		}
		if got := string(d.TTL); got != c.ttl {
			r.errorf("%s: %s/%s version %d has ttl %q, written with %q", path, it.coll, it.id, d.V, got, c.ttl)
		}
		if x.mustHaveExpired(d.TS, c.ttl, sent) {
			r.errorf("%s: %s/%s is expired (_ts %d, ttl %q) but visible at %v", path, it.coll, it.id, d.TS, c.ttl, sent.Format(time.RFC3339Nano))
		}
		return
	}
	r.errorf("%s: %s/%s shows version %d; acknowledged %v, unacknowledged %v", path, it.coll, it.id, d.V, it.acked, it.pending)
}

// mayBeAbsent reports whether a read answered by recv may not show it.
func (r *crashRun) mayBeAbsent(it *trackedItem, recv time.Time) bool {
	x := r.rules[it.coll]
	for i, c := range it.candidates() {
		ts := c.ts
		if i == 1 {
			ts = c.sent.Unix() // the earliest it can have been written
		}
		if !c.exists || x.mayHaveExpired(ts, c.ttl, recv) {
			return true
		}
	}
	return false
}

// sighting is what a point read saw of an item: absent, or a version.
type sighting struct {
	present bool
	v       int
}

// checkAll reads every tracked item through point reads, the read feed, a
// query and the change feed, and returns what the point reads saw. prev,
// when not nil, is what an earlier round saw: an item absent then must
// still be absent (B1), and one present must show the same version or have
// expired.
func (r *crashRun) checkAll(e *env, db string, items map[string]*trackedItem, colls []string, prev map[string]sighting) map[string]sighting {
	t := r.t
	seen := make(map[string]sighting, len(items))
	var mu sync.Mutex
	keys := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keys {
				it := items[k]
				c, _ := e.client.NewContainer(db, it.coll)
				sent := time.Now()
				resp, err := c.ReadItem(context.Background(), azcosmos.NewPartitionKeyString(it.pk), it.id, nil)
				recv := time.Now()
				var o sighting
				switch {
				case err == nil:
					r.checkPresent("point read", it, resp.Value, sent)
					var d struct{ V int }
					_ = json.Unmarshal(resp.Value, &d)
					o = sighting{present: true, v: d.V}
				case statusOf(err) == 404:
					if !r.mayBeAbsent(it, recv) {
						r.errorf("point read: %s/%s is missing; acknowledged %v, unacknowledged %v", it.coll, it.id, it.acked, it.pending)
					}
				default:
					r.errorf("point read %s/%s: %v", it.coll, it.id, err)
					continue
				}
				if p, ok := prev[k]; ok {
					switch {
					case !p.present && o.present:
						r.errorf("%s/%s came back (version %d) after being gone before the restart", it.coll, it.id, o.v)
					case p.present && o.present && p.v != o.v:
						r.errorf("%s/%s changed from version %d to %d across a restart", it.coll, it.id, p.v, o.v)
					}
				}
				mu.Lock()
				seen[k] = o
				mu.Unlock()
			}
		}()
	}
	for k := range items {
		keys <- k
	}
	close(keys)
	wg.Wait()

	for _, coll := range colls {
		sent := time.Now()
		feed := r.readFeed(e, db, coll)
		r.checkListing("read feed", coll, feed, items, sent, time.Now())
		sent = time.Now()
		rows := r.queryAll(e, db, coll)
		r.checkListing("query", coll, rows, items, sent, time.Now())
		sent = time.Now()
		changes := r.changeFeed(e, db, coll)
		r.checkListing("change feed", coll, changes, items, sent, time.Now())
	}
	if t.Failed() {
		t.FailNow()
	}
	return seen
}

// checkListing checks the items a feed or query listed between sent and
// recv: each must be a tracked version, not expired; each tracked item
// that cannot have gone must be listed.
func (r *crashRun) checkListing(path, coll string, docs [][]byte, items map[string]*trackedItem, sent, recv time.Time) {
	listed := map[string]bool{}
	for _, b := range docs {
		var d struct{ ID, PK string }
		if err := json.Unmarshal(b, &d); err != nil {
			r.errorf("%s of %s: %s: %v", path, coll, b, err)
			continue
		}
		k := coll + "/" + d.PK + "/" + d.ID
		it, ok := items[k]
		if !ok {
			r.errorf("%s of %s lists %s, which no client wrote", path, coll, k)
			continue
		}
		if listed[k] {
			r.errorf("%s of %s lists %s twice", path, coll, k)
		}
		listed[k] = true
		r.checkPresent(path, it, b, sent)
	}
	for k, it := range items {
		if it.coll == coll && !listed[k] && !r.mayBeAbsent(it, recv) {
			r.errorf("%s of %s misses %s; acknowledged %v, unacknowledged %v", path, coll, k, it.acked, it.pending)
		}
	}
}

func (r *crashRun) readFeed(e *env, db, coll string) [][]byte {
	var docs [][]byte
	cont := ""
	for {
		hdr := map[string]string{"x-ms-max-item-count": "500"}
		if cont != "" {
			hdr["x-ms-continuation"] = cont
		}
		resp := e.do("GET", "/dbs/"+db+"/colls/"+coll+"/docs", nil, hdr)
		if resp.status != 200 {
			r.t.Fatalf("read feed of %s: %d %s", coll, resp.status, resp.body)
		}
		var page struct{ Documents []json.RawMessage }
		if err := json.Unmarshal(resp.body, &page); err != nil {
			r.t.Fatal(err)
		}
		for _, d := range page.Documents {
			docs = append(docs, d)
		}
		if cont = resp.header.Get("x-ms-continuation"); cont == "" {
			return docs
		}
	}
}

func (r *crashRun) queryAll(e *env, db, coll string) [][]byte {
	c, _ := e.client.NewContainer(db, coll)
	var rows [][]byte
	p := c.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 500})
	for p.More() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			r.t.Fatalf("query %s: %v", coll, err)
		}
		rows = append(rows, page.Items...)
	}
	return rows
}

// changeFeed reads the change feed (latest version) from the beginning.
func (r *crashRun) changeFeed(e *env, db, coll string) [][]byte {
	c, _ := e.client.NewContainer(db, coll)
	ranges, err := c.ReadFeedRanges(context.Background(), nil)
	if err != nil {
		r.t.Fatalf("feed ranges of %s: %v", coll, err)
	}
	var docs [][]byte
	for _, rg := range ranges {
		opts := &azcosmos.ChangeFeedOptions{FeedRange: &rg, MaxItemCount: 500}
		for {
			resp, err := c.ReadChangeFeed(context.Background(), opts)
			if err != nil {
				r.t.Fatalf("change feed of %s: %v", coll, err)
			}
			if resp.Count == 0 {
				break
			}
			docs = append(docs, resp.Items...)
			opts = &azcosmos.ChangeFeedOptions{MaxItemCount: 500, Continuation: &resp.ContinuationToken}
		}
	}
	return docs
}

// crashWriter drives one client's writes to its own items of one container,
// sequentially, until ctx ends or an answer is lost.
type crashWriter struct {
	run   *crashRun
	c     *azcosmos.ContainerClient
	coll  string
	name  string // its partition key value
	mode  string // "mixed": upsert, patch, delete; "upsert"; "create"
	rng   *rand.Rand
	items []*trackedItem
	acks  int
}

var ttlChoices = []string{"", "", "2", "-1"}

func (w *crashWriter) loop(ctx context.Context) {
	pk := azcosmos.NewPartitionKeyString(w.name)
	opts := &azcosmos.ItemOptions{EnableContentResponseOnWrite: true}
	for ctx.Err() == nil {
		var it *trackedItem
		if len(w.items) == 0 || w.mode == "create" || w.rng.IntN(4) == 0 {
			it = &trackedItem{coll: w.coll, pk: w.name, id: fmt.Sprintf("%s-%d", w.name, len(w.items))}
			w.items = append(w.items, it)
		} else {
			it = w.items[w.rng.IntN(len(w.items))]
		}
		op := "upsert"
		switch {
		case w.mode == "create":
			op = "create"
		case w.mode == "mixed" && it.acked.exists && !it.gone:
			switch n := w.rng.IntN(10); {
			case n < 3:
				op = "patch"
			case n < 4:
				op = "delete"
			}
		}
		next := itemVersion{exists: true, v: it.acked.v + 1, ttl: ttlChoices[w.rng.IntN(len(ttlChoices))]}
		if w.coll == "durable" {
			next.ttl = ""
		}
		var ops azcosmos.PatchOperations
		switch op {
		case "patch":
			next.ttl = it.acked.ttl
			ops.AppendSet("/v", next.v)
			if w.rng.IntN(2) == 0 {
				next.ttl = ttlChoices[w.rng.IntN(len(ttlChoices))]
				if next.ttl == "" {
					if it.acked.ttl != "" {
						ops.AppendRemove("/ttl")
					}
				} else {
					ops.AppendSet("/ttl", json.RawMessage(next.ttl))
				}
			}
		case "delete":
			next = itemVersion{v: it.acked.v}
		}
		body := fmt.Sprintf(`{"id":%q,"pk":%q,"v":%d,"pad":"%0128d"`, it.id, w.name, next.v, next.v)
		if next.ttl != "" {
			body += `,"ttl":` + next.ttl
		}
		body += "}"

		next.sent = time.Now()
		var resp azcosmos.ItemResponse
		var err error
		switch op {
		case "create":
			resp, err = w.c.CreateItem(ctx, pk, []byte(body), opts)
		case "upsert":
			resp, err = w.c.UpsertItem(ctx, pk, []byte(body), opts)
		case "patch":
			resp, err = w.c.PatchItem(ctx, pk, it.id, ops, opts)
		case "delete":
			resp, err = w.c.DeleteItem(ctx, pk, it.id, nil)
		}
		recv := time.Now()
		var re *azcore.ResponseError
		switch {
		case err == nil:
			if next.exists {
				var d struct {
					TS int64 `json:"_ts"`
				}
				if jerr := json.Unmarshal(resp.Value, &d); jerr != nil || d.TS == 0 {
					w.run.errorf("%s %s/%s: response %s", op, w.coll, it.id, resp.Value)
				}
				next.ts = d.TS
			}
			it.acked, it.gone = next, false
			w.acks++
		case errors.As(err, &re) && re.StatusCode == 404 && (op == "patch" || op == "delete"):
			// The item expired: legitimate only if its due second came.
			if !w.run.mayBeAbsent(it, recv) {
				w.run.errorf("%s %s/%s: 404 while it was live: acknowledged %v", op, w.coll, it.id, it.acked)
			}
			it.gone = true
		case errors.As(err, &re):
			w.run.errorf("%s %s/%s: %v", op, w.coll, it.id, err)
			return
		default:
			// No answer: the write may or may not have happened.
			it.pending = &next
			if !w.run.dying.Load() {
				w.run.errorf("%s %s/%s failed before the kill: %v", op, w.coll, it.id, err)
			}
			return
		}
	}
}

// TestCrash_KillDuringWritesAndPurge kills mayfly with SIGKILL while
// clients write to three containers and the purger deletes expired items:
//   - "ttl", defaultTtl 1: upserts, patches and deletes of items that
//     inherit the default, have ttl 2, or ttl -1;
//   - "switch", defaultTtl 1, turned off while writes go on (B1: what
//     expired before stays expired, across the crash too);
//   - "durable", no TTL: creates only, every acknowledged one must survive.
//
// It restarts mayfly on the same directory, checks every item through point
// reads, the read feed, queries and the change feed, kills it again at once
// (the purger is then busy with the backlog), restarts and checks again,
// stops it, and finally opens the directory offline to verify the indexes
// against the items.
func TestCrash_KillDuringWritesAndPurge(t *testing.T) {
	t0 := time.Now()
	bin := buildMayfly(t)
	t.Logf("built mayfly in %v", time.Since(t0).Round(time.Millisecond))
	dir := t.TempDir()
	p := startProcess(t, bin, dir)
	e := connect(t, p)
	const db = "crash"
	if _, err := e.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: db}, nil); err != nil {
		t.Fatal(err)
	}
	run := &crashRun{t: t, rules: map[string]*expiryRule{"ttl": {defaultTTL: 1}, "switch": {defaultTTL: 1}, "durable": {}}}
	colls := []string{"ttl", "switch", "durable"}
	dbc, err := e.client.NewDatabase(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, coll := range colls {
		props := azcosmos.ContainerProperties{ID: coll, PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}
		if d := run.rules[coll].defaultTTL; d != 0 {
			props.DefaultTimeToLive = i32(int32(d))
		}
		if _, err := dbc.CreateContainer(ctx, props, nil); err != nil {
			t.Fatal(err)
		}
	}

	var writers []*crashWriter
	add := func(coll, mode string, n int) {
		for i := range n {
			c, _ := e.client.NewContainer(db, coll)
			writers = append(writers, &crashWriter{run: run, c: c, coll: coll, name: fmt.Sprintf("%s%d", coll, i), mode: mode,
				rng: rand.New(rand.NewPCG(uint64(len(writers)), 1))})
		}
	}
	add("ttl", "mixed", 6)
	add("switch", "upsert", 3)
	add("durable", "create", 3)
	wctx, stopWriters := context.WithCancel(context.Background())
	defer stopWriters()
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(wctx)
		}()
	}

	// Turn TTL off on "switch" while its writers go on.
	time.Sleep(1300 * time.Millisecond)
	sw, _ := e.client.NewContainer(db, "switch")
	props := readProps(t, sw)
	props.DefaultTimeToLive = nil
	off0 := time.Now()
	if _, err := sw.Replace(ctx, props, nil); err != nil {
		t.Fatalf("turn TTL off on switch: %v", err)
	}
	run.rules["switch"].off0, run.rules["switch"].off1 = off0, time.Now()

	// Kill while items written a second ago expire and are purged.
	time.Sleep(1300 * time.Millisecond)
	before := e.metrics(t)
	run.dying.Store(true)
	run.killed = time.Now()
	p.kill(t)
	stopWriters()
	wg.Wait()

	items := map[string]*trackedItem{}
	acks, pending := 0, 0
	for _, w := range writers {
		acks += w.acks
		for _, it := range w.items {
			items[it.coll+"/"+it.pk+"/"+it.id] = it
			if it.pending != nil {
				pending++
			}
		}
	}
	t.Logf("%d acknowledged writes to %d items; %d writes without an answer at the kill; %v items purged just before it",
		acks, len(items), pending, before[`mayfly_ttl_items_purged_total{container="dbs/crash/colls/ttl"}`])
	if acks < 500 {
		t.Fatalf("only %d acknowledged writes: too few to test anything", acks)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Restart and check; kill again at once, while the purger works
	// through the backlog; restart and check again.
	t1 := time.Now()
	p = startProcess(t, bin, dir)
	t.Logf("restarted in %v", time.Since(t1).Round(time.Millisecond))
	seen := run.checkAll(connect(t, p), db, items, colls, nil)
	p.kill(t)
	p = startProcess(t, bin, dir)
	e = connect(t, p)
	seen = run.checkAll(e, db, items, colls, seen)
	t.Logf("two restarts and checks in %v", time.Since(t1).Round(time.Millisecond))
	metrics := e.metrics(t)
	e.http.CloseIdleConnections() // spares the server's wait for HTTP/2 clients
	p.stop(t)
	present := map[string]int{}
	for k, o := range seen {
		if o.present {
			present[items[k].coll]++
		}
	}
	t.Logf("after the restarts: present %v of %d items; purged by the last process %v", present, len(items),
		metrics[`mayfly_ttl_items_purged_total{container="dbs/crash/colls/ttl"}`])

	// Offline: the indexes match the items exactly.
	st, err := pebblestore.Open(pebblestore.Options{Dir: filepath.Join(dir, "store")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng, err := engine.New(engine.Config{Store: st, Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	counts, err := eng.CheckIndexes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := counts["dbs/crash/colls/durable"]; got.Items != present["durable"] || got.Expired != 0 {
		t.Errorf("durable on disk: %+v, want exactly the %d items read", got, present["durable"])
	}
	if got := counts["dbs/crash/colls/switch"]; got.Items-got.Expired != present["switch"] {
		t.Errorf("switch on disk: %+v, want %d live items, as read", got, present["switch"])
	}
	t.Logf("on disk: %+v", counts)
}
