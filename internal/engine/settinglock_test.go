package engine

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pgstore"
	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// guard bounds every wait in these tests. It only turns a hang into a
// failure; nothing here depends on how long anything takes.
const guard = 20 * time.Second

// gate holds the store calls made with its context until it is opened.
type gate struct {
	entered chan struct{} // closed when the first held call arrives
	release chan struct{} // closed to let the held calls through
	once    sync.Once
	open    sync.Once
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) hold() {
	g.once.Do(func() { close(g.entered) })
	<-g.release
}

func (g *gate) opened() { g.open.Do(func() { close(g.release) }) }

type gateKey struct{}

// gateStore is a store whose View and Update wait at the gate of their
// context, if it has one: a long operation on one container, held open
// for as long as a test needs.
type gateStore struct{ storage.Store }

func (s gateStore) View(ctx context.Context, fn func(r storage.Reader) error) error {
	if g, ok := ctx.Value(gateKey{}).(*gate); ok {
		g.hold()
	}
	return s.Store.View(ctx, fn)
}

func (s gateStore) Update(ctx context.Context, fn func(tx storage.Txn) error) error {
	if g, ok := ctx.Value(gateKey{}).(*gate); ok {
		g.hold()
	}
	return s.Store.Update(ctx, fn)
}

// await returns what ch delivers, failing the test if nothing comes.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("%s did not finish", what)
		panic("unreachable")
	}
}

// awaitLockWait waits until some goroutine is waiting for the exclusive
// side of an RWMutex inside fn, the name of an Engine method.
func awaitLockWait(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(guard); ; {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "sync.(*RWMutex).Lock(") && strings.Contains(g, "engine.(*Engine)."+fn+"(") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never waited for a lock", fn)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestB1_ChangeWaitsOnlyForItsContainer: a TTL setting change waits for
// the expiry judgements in progress on its own container (B1), and
// nothing on another container waits for either of them.
func TestB1_ChangeWaitsOnlyForItsContainer(t *testing.T) {
	s := teststore.Open(t)
	g := newGate()
	t.Cleanup(g.opened) // before the store closes, should the test fail
	clk := clock.NewManual(batchT0)
	e, err := New(Config{Store: gateStore{s}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.CreateDatabase(ctx, batchJSON(t, `{"id":"db"}`), nil); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"id":"a","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":10}`,
		`{"id":"b","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1}`,
	} {
		if _, err := e.CreateContainer(ctx, "db", batchJSON(t, body), nil); err != nil {
			t.Fatal(err)
		}
	}
	ref := func(coll string) ItemRef {
		r := batchRef(`["p"]`)
		r.Coll = coll
		return r
	}
	for _, coll := range []string{"a", "b"} {
		if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref(coll), Mode: ModeCreate, Body: []byte(`{"id":"x","pk":"p"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(10 * time.Second) // a's x has just expired

	type result struct {
		res *ItemResult
		err error
	}
	// A point read on a, held open inside its store snapshot.
	readA := make(chan result, 1)
	go func() {
		res, err := e.ReadItem(context.WithValue(ctx, gateKey{}, g), ReadItemParams{ItemRef: ref("a"), ID: "x"})
		readA <- result{res, err}
	}()
	await(t, g.entered, "the read on a")
	// Turning TTL off on a must wait for that read to have judged.
	offA := batchJSON(t, `{"id":"a","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	replaceA := make(chan error, 1)
	go func() {
		_, err := e.ReplaceContainer(ctx, "db", "a", offA, "")
		replaceA <- err
	}()
	awaitLockWait(t, "ReplaceContainer")

	// Meanwhile b reads, writes and changes its own setting.
	longerB := batchJSON(t, `{"id":"b","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":60}`)
	onB := make(chan error, 1)
	go func() {
		if _, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref("b"), ID: "x"}); err != nil {
			onB <- err
			return
		}
		if _, err := e.WriteItem(ctx, WriteItemParams{ItemRef: ref("b"), Mode: ModeUpsert, Body: []byte(`{"id":"y","pk":"p"}`)}); err != nil {
			onB <- err
			return
		}
		_, err := e.ReplaceContainer(ctx, "db", "b", longerB, "")
		onB <- err
	}()
	if err := await(t, onB, "work on b while a is busy"); err != nil {
		t.Fatalf("work on b: %v", err)
	}
	select {
	case err := <-replaceA:
		t.Fatalf("the change on a finished (err %v) while a judgement on a was in progress", err)
	default:
	}

	g.opened()
	if r := await(t, readA, "the read on a"); !isCode(r.err, NotFound) {
		t.Fatalf("read of expired a/x: %v, want NotFound", r.err)
	}
	if err := await(t, replaceA, "the change on a"); err != nil {
		t.Fatal(err)
	}
	// B1: turning TTL off did not bring a/x back.
	if _, err := e.ReadItem(ctx, ReadItemParams{ItemRef: ref("a"), ID: "x"}); !isCode(err, NotFound) {
		t.Fatalf("read of a/x after TTL off: %v, want NotFound", err)
	}
	if _, err := e.CheckIndexes(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSettingLocksAreDropped: the engine keeps a container's setting lock
// only while some operation uses it.
func TestSettingLocksAreDropped(t *testing.T) {
	be := newBatchEnv(t, "10")
	be.seed(t, `{"id":"x","pk":"p"}`)
	ctx := context.Background()
	if _, err := be.e.ReadItem(ctx, ReadItemParams{ItemRef: batchRef(`["p"]`), ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := be.e.ReplaceContainer(ctx, "db", "c", batchJSON(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1}`), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := be.e.ReadItem(ctx, ReadItemParams{ItemRef: ItemRef{DB: "db", Coll: "gone"}, ID: "x"}); !isCode(err, NotFound) {
		t.Fatalf("read in a missing container: %v, want NotFound", err)
	}
	be.e.lockMu.Lock()
	defer be.e.lockMu.Unlock()
	if n := len(be.e.locks); n != 0 {
		t.Fatalf("%d setting locks kept after every operation ended", n)
	}
}

func isCode(err error, c Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == c
}

// Over PostgreSQL, a setting change takes its instant through its own
// transaction's connection: a gateway whose pool has one connection
// replaces a container, where a separate reading of the clock would wait
// for a second connection until the request gave up.
func TestSettingChangeOnOneConnection(t *testing.T) {
	ps, err := pgstore.Open(context.Background(), pgstore.Options{URL: pgtest.URL(t), PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	e, err := New(Config{Store: ps, Clock: clock.NewManual(batchT0)})
	if err != nil {
		t.Fatal(err)
	}
	createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, ttl := range []string{`,"defaultTtl":60`, `,"defaultTtl":-1`, ``} {
		body := batchJSON(t, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}`+ttl+`}`)
		if _, err := e.ReplaceContainer(ctx, "db", "c", body, ""); err != nil {
			t.Fatalf("replace with%s: %v", ttl, err)
		}
	}
}
