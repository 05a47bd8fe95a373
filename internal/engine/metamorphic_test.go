package engine_test

// The metamorphic test: a seed draws a container (partition key, indexing
// policy, TTL setting, from the differential test's generators) on a store
// that outlives a restart (a Pebble directory on disk, or with
// MAYFLY_TEST_STORE=postgres a PostgreSQL database), then a sequence of random steps: creates, upserts,
// replaces, patches, deletes and reads of items, atomic batches of them,
// items with their own ttl, changes of the container's defaultTtl and of
// its indexing policy (with some passes of the index builder), a manual
// clock that moves forward so items expire, purger passes, and restarts of
// the engine on the same directory. A model kept by the test predicts the
// outcome of every operation (ttl.md's rules decide what has expired), and
// every few steps, and at the end, the engine is compared with it: the
// read feed returns exactly the items the model says are readable, random
// queries in every scope agree with the evaluator over them (the
// differential test's check), and CheckIndexes finds the indexes
// consistent and as many unexpired records as the model has items.
//
// By default three seeds run 150 steps each (two of 80 under -short and
// -race). MAYFLY_META_ROUNDS sets the steps per seed, MAYFLY_META_SEEDS the
// number of seeds, MAYFLY_META_SEED runs one seed; a failure names its
// seed and the last steps taken.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

func TestMetamorphic(t *testing.T) {
	rounds, seeds := 150, 3
	if testing.Short() || engine.RaceEnabled {
		rounds, seeds = 80, 2
	}
	if s := os.Getenv("MAYFLY_META_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("MAYFLY_META_ROUNDS=%q: want a positive number", s)
		}
		rounds = n
	}
	if s := os.Getenv("MAYFLY_META_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("MAYFLY_META_SEEDS=%q: want a positive number", s)
		}
		seeds = n
	}
	if s := os.Getenv("MAYFLY_META_SEED"); s != "" {
		metaKeepSteps = 1000 // one seed: the whole story
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MAYFLY_META_SEED=%q: %v", s, err)
		}
		runMetaScenario(t, seed, rounds)
		return
	}
	for i := 0; i < seeds; i++ {
		seed := uint64(i + 1)
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			runMetaScenario(t, seed, rounds)
		})
	}
}

// metaItem is what the model knows of one id. An id keeps the partition
// key it was first drawn with, so deleting or expiring it and writing it
// again reuses the same (key, id).
type metaItem struct {
	id       string
	pk, sk   document.Value // the partition key values its bodies carry
	key      partition.Key
	body     document.Value // the user properties last written
	ts       int64          // _ts of the last write
	written  bool           // written and not deleted since (it may have expired)
	finished bool           // expired under an earlier TTL setting: final (ttl.md B1)
}

// metaTTL is the container's defaultTtl: off (absent), or on with -1 or a
// number of seconds.
type metaTTL struct {
	on  bool
	def int
}

func (m metaTTL) String() string {
	if !m.on {
		return "off"
	}
	return strconv.Itoa(m.def)
}

type metaScenario struct {
	*diffScenario
	store  storage.Store
	reopen func() (storage.Store, error)
	purger *ttl.Purger
	rounds int

	setting metaTTL
	items   map[string]*metaItem
	ids     []string // in the order they were drawn, for determinism
	pool    int      // partition key values drawn from
	steps   []string // the last steps, for failure reports
	counts  map[string]int
}

func runMetaScenario(t *testing.T, seed uint64, rounds int) {
	store, reopen := teststore.OpenDurable(t)
	d := newDiffState(t, seed)
	m := &metaScenario{diffScenario: d, store: store, reopen: reopen, rounds: rounds, items: map[string]*metaItem{}, counts: map[string]int{}}
	t.Cleanup(func() { m.store.Close() })
	d.rerun = fmt.Sprintf("MAYFLY_META_SEED=%d MAYFLY_META_ROUNDS=%d go test -run 'TestMetamorphic$' ./internal/engine", seed, rounds)
	d.setUp(store, false)
	// setUp turns TTL on with defaultTtl -1 or leaves it off; from here the
	// model decides, and genBody's own ttl values are replaced by the
	// test's.
	m.setting = metaTTL{on: d.ttl, def: -1}
	m.pool = []int{1, 3, 10}[d.rng.IntN(3)]
	m.startPurger()

	for step := 0; step < rounds && !t.Failed(); step++ {
		m.step()
		if step%25 == 24 {
			m.compare()
		}
	}
	if t.Failed() {
		m.report()
		return
	}
	m.restart()
	m.compare()
	m.purgeAll()
	m.compare()
	if t.Failed() {
		m.report()
	}
	if testing.Verbose() {
		t.Logf("seed %d: %d ids, steps %v, refused %v, access paths %v", seed, len(m.items), m.counts, d.refused, d.chosen)
	}
}

func (m *metaScenario) report() {
	m.t.Errorf("seed %d (%s), defaultTtl %s, the last steps:\n  %s", m.seed, m.rerun, m.setting, strings.Join(m.steps, "\n  "))
}

func (m *metaScenario) note(format string, args ...any) {
	m.steps = append(m.steps, fmt.Sprintf(format, args...))
	if len(m.steps) > metaKeepSteps {
		m.steps = m.steps[1:]
	}
}

// fatal stops the scenario with the steps that led to the failure.
func (m *metaScenario) fatal(format string, args ...any) {
	m.t.Helper()
	m.t.Errorf(format, args...)
	m.report()
	m.t.FailNow()
}

func (m *metaScenario) startPurger() {
	m.purger = ttl.New(ttl.Config{Target: m.e, Clock: m.clk, BatchSize: 1 + m.rng.IntN(50)})
}

// step takes one random step.
func (m *metaScenario) step() {
	r := m.rng
	switch x := r.IntN(100); {
	case x < 18:
		m.write(engine.ModeCreate)
	case x < 30:
		m.write(engine.ModeUpsert)
	case x < 40:
		m.write(engine.ModeReplace)
	case x < 50:
		m.patch()
	case x < 58:
		m.delete()
	case x < 66:
		m.read()
	case x < 74:
		m.batch()
	case x < 85:
		m.advance()
	case x < 90:
		m.purge()
	case x < 94:
		m.changeTTL()
	case x < 97:
		m.changeIndexing()
	default:
		m.restart()
	}
}

// pick returns an id: one used before (live, deleted or expired) or a new
// one.
func (m *metaScenario) pick() *metaItem {
	if len(m.ids) > 0 && m.rng.IntN(10) < 7 {
		return m.items[m.ids[m.rng.IntN(len(m.ids))]]
	}
	return m.newItem(nil)
}

// newItem draws a new id, under key's values when like is not nil.
func (m *metaScenario) newItem(like *metaItem) *metaItem {
	it := &metaItem{id: "m" + strconv.Itoa(len(m.ids))}
	switch {
	case like != nil:
		it.pk, it.sk = like.pk, like.sk
	case len(m.def.Paths) > 1:
		it.pk, it.sk = document.Str("p"+strconv.Itoa(m.rng.IntN(m.pool))), document.Undef
		if m.rng.IntN(10) > 0 {
			it.sk = document.Str("s" + strconv.Itoa(m.rng.IntN(3)))
		}
	default:
		it.pk, it.sk = m.keyValue(len(m.ids), m.pool), document.Undef
	}
	it.key = m.keyOf(m.genBody(it.id, it.pk, it.sk))
	m.items[it.id] = it
	m.ids = append(m.ids, it.id)
	return it
}

// genItemBody draws a body for it with an own ttl the model can judge:
// absent, null, -1 or a few seconds to minutes.
func (m *metaScenario) genItemBody(it *metaItem) document.Value {
	b := m.genBody(it.id, it.pk, it.sk).Without("ttl")
	switch x := m.rng.IntN(10); {
	case x < 5:
	case x < 6:
		b = b.With("ttl", document.NullValue())
	case x < 7:
		b = b.With("ttl", document.Int(-1))
	default:
		b = b.With("ttl", document.Int(int64([]int{1, 2, 5, 10, 30, 100}[m.rng.IntN(6)])))
	}
	return b
}

func (m *metaScenario) now() time.Time { return m.clk.Now() }

// effectiveTTL is the item's ttl in seconds under the current setting; -1
// when it does not expire (ttl.md A1).
func (m *metaScenario) effectiveTTL(it *metaItem) int64 {
	if !m.setting.on {
		return -1
	}
	if own := it.body.Get("ttl"); own.Kind() == document.Number {
		return own.Int()
	}
	return int64(m.setting.def)
}

// expired reports whether it has expired by now under the current
// setting: _ts + ttl <= now (ttl.md A2).
func (m *metaScenario) expired(it *metaItem) bool {
	if it.finished {
		return true
	}
	ttl := m.effectiveTTL(it)
	return ttl >= 0 && !m.now().Before(time.Unix(it.ts+ttl, 0))
}

// readable reports whether the model says it can be read now.
func (m *metaScenario) readable(it *metaItem) bool {
	return it.written && !m.expired(it)
}

// state describes what the model knows of it.
func (m *metaScenario) state(it *metaItem) string {
	switch {
	case !it.written:
		return "deleted or never written"
	case it.finished:
		return fmt.Sprintf("expired under an earlier setting (_ts %d, body %s)", it.ts, it.body.JSON())
	}
	return fmt.Sprintf("written at _ts %d with effective ttl %d, readable %v at %v (body %s)", it.ts, m.effectiveTTL(it), m.readable(it), m.now().Format("15:04:05.000"), it.body.JSON())
}

func (m *metaScenario) wrote(it *metaItem, body document.Value) {
	it.body, it.ts, it.written, it.finished = body, m.now().Unix(), true, false
}

// expect compares an operation's outcome with the model's prediction:
// want is the error code, or -1 for success.
func (m *metaScenario) expect(what string, err error, want engine.Code) {
	m.t.Helper()
	m.counts[strings.Fields(what)[0]]++
	switch {
	case err == nil && want < 0:
	case err == nil:
		m.fatal("%s succeeded; the model expects error code %d", what, want)
	case want < 0:
		m.fatal("%s: %v (code %d); the model expects success", what, err, engine.ErrorCode(err))
	case engine.ErrorCode(err) != want:
		m.fatal("%s: %v (code %d); the model expects code %d", what, err, engine.ErrorCode(err), want)
	}
}

func (m *metaScenario) write(mode engine.WriteMode) {
	it := m.pick()
	body := m.genItemBody(it)
	invalid := false
	if mode == engine.ModeUpsert && m.setting.on && m.rng.IntN(10) == 0 {
		// a ttl no container with TTL on accepts (ttl.md A1)
		body, invalid = body.With("ttl", document.Int(0)), true
	}
	name := map[engine.WriteMode]string{engine.ModeCreate: "create", engine.ModeUpsert: "upsert", engine.ModeReplace: "replace"}[mode]
	m.note("%s %s %s (readable %v)", name, it.id, body.JSON(), m.readable(it))
	ref := m.ref(it.key)
	if mode == engine.ModeCreate && m.rng.IntN(2) == 0 {
		ref = engine.ItemRef{DB: "db", Coll: "c"} // the key taken from the body
	}
	_, err := m.e.WriteItem(m.ctx, engine.WriteItemParams{ItemRef: ref, Mode: mode, ID: it.id, Body: body.JSON()})
	want := engine.Code(-1)
	switch {
	case invalid:
		want = engine.BadRequest
	case mode == engine.ModeCreate && m.readable(it):
		want = engine.Conflict
	case mode == engine.ModeReplace && !m.readable(it):
		want = engine.NotFound
	}
	m.expect(name+" "+it.id, err, want)
	if want < 0 {
		m.wrote(it, body)
	}
}

// patchOps draws a patch of it's body: sets of ordinary properties and
// of its ttl, and the body the patch gives.
func (m *metaScenario) patchOps(it *metaItem) (ops string, after document.Value) {
	after = it.body
	var parts []string
	for i := 1 + m.rng.IntN(3); i > 0; i-- {
		var name string
		var v document.Value
		switch m.rng.IntN(5) {
		case 0, 1:
			name, v = "n", m.num()
		case 2:
			name, v = "s", m.str()
		case 3:
			name, v = "b", document.BoolValue(m.rng.IntN(2) == 0)
		default:
			name, v = "ttl", document.Int(int64([]int{-1, 1, 5, 30}[m.rng.IntN(4)]))
		}
		parts = append(parts, `{"op":"set","path":"/`+name+`","value":`+string(v.JSON())+`}`)
		after = after.With(name, v)
	}
	return "[" + strings.Join(parts, ",") + "]", after
}

func (m *metaScenario) patch() {
	it := m.pick()
	if !it.written {
		it.body = m.genItemBody(it) // a patch of an item never written: 404
	}
	text, after := m.patchOps(it)
	ops, _, err := engine.ParsePatch([]byte(text))
	if err != nil {
		m.t.Fatalf("seed %d: the generated patch %s: %v", m.seed, text, err)
	}
	cond := ""
	pass := true
	if m.rng.IntN(4) == 0 {
		cond = "FROM c WHERE c.b = true"
		pass = it.body.Get("b").Kind() == document.Bool && it.body.Get("b").Bool()
	}
	m.note("patch %s %s %q (readable %v)", it.id, text, cond, m.readable(it))
	_, err = m.e.PatchItem(m.ctx, engine.PatchItemParams{ItemRef: m.ref(it.key), ID: it.id, Ops: ops, Condition: cond})
	want := engine.Code(-1)
	switch {
	case !m.readable(it):
		want = engine.NotFound
	case !pass:
		want = engine.PreconditionFailed
	}
	m.expect("patch "+it.id, err, want)
	if want < 0 {
		m.wrote(it, after)
	}
}

func (m *metaScenario) delete() {
	it := m.pick()
	m.note("delete %s (readable %v)", it.id, m.readable(it))
	_, err := m.e.DeleteItem(m.ctx, engine.DeleteItemParams{ItemRef: m.ref(it.key), ID: it.id})
	want := engine.Code(-1)
	if !m.readable(it) {
		want = engine.NotFound
	}
	m.expect("delete "+it.id, err, want)
	it.written = false
}

func (m *metaScenario) read() {
	it := m.pick()
	m.note("read %s (readable %v)", it.id, m.readable(it))
	res, err := m.e.ReadItem(m.ctx, engine.ReadItemParams{ItemRef: m.ref(it.key), ID: it.id})
	want := engine.Code(-1)
	if !m.readable(it) {
		want = engine.NotFound
	}
	m.expect("read "+it.id, err, want)
	if err == nil {
		m.sameBody("read "+it.id, res.Body, it)
	}
}

// sameBody checks a stored item against the model's body and _ts.
func (m *metaScenario) sameBody(what string, raw []byte, it *metaItem) {
	m.t.Helper()
	v, err := document.Parse(raw)
	if err != nil {
		m.fatal("%s: stored item %s: %v", what, raw, err)
	}
	if got, want := diffCanon(v.Without("_rid", "_self", "_etag", "_attachments", "_ts")), diffCanon(it.body); got != want {
		m.fatal("%s: got %s, the model has %s", what, got, want)
	}
	if ts := v.Get("_ts"); !ts.IsInt() || ts.Int() != it.ts {
		m.fatal("%s: _ts %s, the model has %d", what, ts.JSON(), it.ts)
	}
}

// batch runs an atomic batch under one partition key and predicts it op
// by op: all of it commits, or nothing does and the first operation the
// model says fails is the one that failed.
func (m *metaScenario) batch() {
	first := m.pick()
	var same []*metaItem
	for _, id := range m.ids {
		if it := m.items[id]; it.key.String() == first.key.String() {
			same = append(same, it)
		}
	}
	type planned struct {
		it      *metaItem
		op      engine.BatchOp
		body    document.Value // what the item becomes
		writes  bool
		deletes bool
	}
	// shadow is the batch's view of the items: readable, and their body.
	readable := map[string]bool{}
	bodies := map[string]document.Value{}
	for _, it := range same {
		readable[it.id] = m.readable(it)
		bodies[it.id] = it.body
	}
	before := fmt.Sprint(readable)
	var ops []planned
	failAt, failCode := -1, engine.Code(-1)
	for i := 1 + m.rng.IntN(4); i > 0; i-- {
		it := first
		switch {
		case m.rng.IntN(4) == 0:
			it = m.newItem(first)
			readable[it.id] = false
		case m.rng.IntN(2) == 0:
			it = same[m.rng.IntN(len(same))]
		}
		p := planned{it: it, op: engine.BatchOp{ID: it.id}}
		want := engine.Code(-1)
		switch m.rng.IntN(6) {
		case 0:
			p.op.Type, p.body, p.writes = engine.BatchCreate, m.genItemBody(it), true
			if readable[it.id] {
				want = engine.Conflict
			}
		case 1:
			p.op.Type, p.body, p.writes = engine.BatchUpsert, m.genItemBody(it), true
		case 2:
			p.op.Type, p.body, p.writes = engine.BatchReplace, m.genItemBody(it), true
			if !readable[it.id] {
				want = engine.NotFound
			}
		case 3:
			p.op.Type, p.deletes = engine.BatchDelete, true
			if !readable[it.id] {
				want = engine.NotFound
			}
		case 4:
			p.op.Type = engine.BatchRead
			if !readable[it.id] {
				want = engine.NotFound
			}
		default:
			if !readable[it.id] {
				bodies[it.id] = m.genItemBody(it)
				want = engine.NotFound
			}
			saved := it.body
			it.body = bodies[it.id]
			text, after := m.patchOps(it)
			it.body = saved
			p.op.Type, p.body, p.writes = engine.BatchPatch, after, true
			p.op.Body = diffJSON(m.t, `{"operations":`+text+`}`)
		}
		if p.op.Body.Kind() == document.Undefined && p.body.IsDefined() {
			p.op.Body = p.body
		}
		if want >= 0 && failAt < 0 {
			failAt, failCode = len(ops), want
		}
		if want < 0 {
			switch {
			case p.writes:
				readable[it.id], bodies[it.id] = true, p.body
			case p.deletes:
				readable[it.id] = false
			}
		}
		ops = append(ops, p)
	}
	var desc []string
	bops := make([]engine.BatchOp, len(ops))
	for i, p := range ops {
		bops[i] = p.op
		desc = append(desc, p.op.Type.String()+" "+p.it.id)
	}
	m.note("batch under %v: %s (readable before: %s)", first.key, strings.Join(desc, ", "), before)
	res, err := m.e.Batch(m.ctx, engine.BatchParams{ItemRef: m.ref(first.key), Ops: bops, Atomic: true})
	if err != nil {
		m.fatal("batch %s: %v", strings.Join(desc, ", "), err)
	}
	m.counts["batch"]++
	if res.Committed != (failAt < 0) {
		m.fatal("batch %s: committed %v, the model expects the operation %d to fail with code %d", strings.Join(desc, ", "), res.Committed, failAt, failCode)
	}
	if failAt >= 0 {
		if got := res.Ops[failAt].Err; got == nil || got.Code != failCode {
			m.fatal("batch %s: operation %d gave %v; the model expects code %d", strings.Join(desc, ", "), failAt, got, failCode)
		}
		return
	}
	for i, p := range ops {
		switch {
		case p.writes:
			m.wrote(p.it, p.body)
			m.sameBody(fmt.Sprintf("batch operation %d", i), res.Ops[i].Body, p.it)
		case p.deletes:
			p.it.written = false
		}
	}
}

// advance moves the clock forward, by less than a second now and then so
// that expiry is judged between whole seconds too.
func (m *metaScenario) advance() {
	d := []time.Duration{300 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute}[m.rng.IntN(6)]
	m.note("advance the clock %v", d)
	m.counts["advance"]++
	m.clk.Advance(d)
}

func (m *metaScenario) purge() {
	n := 1 + m.rng.IntN(3)
	m.note("%d purger passes", n)
	m.counts["purge"]++
	for ; n > 0; n-- {
		if _, err := m.purger.Pass(m.ctx); err != nil {
			m.fatal("purger pass: %v", err)
		}
	}
}

// purgeAll runs the purger until it reports nothing left to do.
func (m *metaScenario) purgeAll() {
	for i := 0; i < 10_000; i++ {
		res, err := m.purger.Pass(m.ctx)
		if err != nil {
			m.fatal("purger pass: %v", err)
		}
		if !res.More {
			return
		}
	}
	m.fatal("the purger still has work after 10000 passes")
}

// containerBody is the container with the given policy and TTL setting.
func (m *metaScenario) containerBody(policy string, set metaTTL) document.Value {
	paths, _ := jsonOf(m.def.Paths)
	body := `{"id":"c","partitionKey":{"paths":` + paths + `,"kind":"` + m.def.Kind + `","version":` + strconv.Itoa(m.def.Version) + `}`
	if policy != "" {
		body += `,"indexingPolicy":` + policy
	}
	if set.on {
		body += `,"defaultTtl":` + strconv.Itoa(set.def)
	}
	return diffJSON(m.t, body+"}")
}

// replaceContainer replaces the container's policy and TTL setting; TTL
// on with indexing mode none is refused (ttl.md A5). The model ends every
// countdown that has run out under the old setting first: an item expired
// then stays expired (ttl.md B1).
func (m *metaScenario) replaceContainer(what string, policy string, set metaTTL) {
	m.note("%s: policy %s, defaultTtl %s", what, orDefault(policy), set)
	_, err := m.e.ReplaceContainer(m.ctx, "db", "c", m.containerBody(policy, set), "")
	want := engine.Code(-1)
	if set.on && diffNone(policy) {
		want = engine.BadRequest
	}
	m.expect(what, err, want)
	if want >= 0 {
		return
	}
	for _, it := range m.items {
		if it.written && m.expired(it) {
			it.finished = true
		}
	}
	m.setting, m.ttl = set, set.on
	if policy != m.policy {
		m.rebuild = "changed from " + orDefault(m.policy)
		m.policy = policy
	}
}

func (m *metaScenario) changeTTL() {
	set := metaTTL{}
	switch m.rng.IntN(4) {
	case 0:
	case 1:
		set = metaTTL{on: true, def: -1}
	default:
		set = metaTTL{on: true, def: []int{3, 20, 90}[m.rng.IntN(3)]}
	}
	// A setting is in force from the instant of its change, and an item
	// falls due at a whole second: one due at the very instant of a change
	// follows the new setting, unless a request judged it at that instant
	// first (the engine then dates the change just after; ttl.md B1). The
	// model does not follow which requests judged which instants, so it
	// changes the setting between whole seconds, where no item falls due.
	if m.now().Nanosecond() == 0 {
		d := time.Duration(1+m.rng.IntN(999)) * time.Millisecond
		m.note("advance the clock %v", d)
		m.clk.Advance(d)
	}
	m.replaceContainer("ttl", m.policy, set)
}

func (m *metaScenario) changeIndexing() {
	policy := diffPolicies[m.rng.IntN(len(diffPolicies))]
	m.replaceContainer("indexing", policy, m.setting)
	if n := []int{0, 1, -1}[m.rng.IntN(3)]; n != 0 {
		m.passes(n)
	}
}

// restart closes the store, opens it again on the same data, and
// builds a new engine, index builder and purger over it; the clock goes
// on.
func (m *metaScenario) restart() {
	m.note("restart")
	m.counts["restart"]++
	if err := m.store.Close(); err != nil {
		m.fatal("close the store: %v", err)
	}
	store, err := m.reopen()
	if err != nil {
		m.fatal("open the store again: %v", err)
	}
	m.store = store
	if m.e, err = engine.New(engine.Config{Store: store, Clock: m.clk, Partitions: m.parts}); err != nil {
		m.fatal("a new engine: %v", err)
	}
	m.indexer = m.e.NewIndexer(nil)
	m.startPurger()
	if _, err := m.e.CheckIndexes(m.ctx); err != nil {
		m.fatal("CheckIndexes after a restart: %v", err)
	}
}

// compare checks the engine against the model: the read feed holds
// exactly the readable items, queries agree with the evaluator over them,
// and the indexes are consistent with as many unexpired records as
// readable items.
func (m *metaScenario) compare() {
	m.note("compare with the model at %v", m.now().Unix())
	m.counts["compare"]++
	m.model = map[string]*diffDoc{}
	readable := 0
	for _, it := range m.items {
		if m.readable(it) {
			m.model[it.id] = &diffDoc{body: it.body}
			readable++
		}
	}
	// A point read of every id first: the most precise report.
	for _, id := range m.ids {
		it := m.items[id]
		res, err := m.e.ReadItem(m.ctx, engine.ReadItemParams{ItemRef: m.ref(it.key), ID: id})
		switch {
		case err == nil && !m.readable(it):
			m.fatal("read %s: found %s; the model has it %s", id, res.Body, m.state(it))
		case err != nil && m.readable(it):
			m.fatal("read %s: %v; the model has it %s", id, err, m.state(it))
		case err == nil:
			m.sameBody("read "+id, res.Body, it)
		}
	}
	m.docs, m.keys = nil, nil
	m.readBack()
	for _, d := range m.docs {
		it := m.items[d.doc.Get("id").Str()]
		if it != nil && m.readable(it) {
			if ts := d.doc.Get("_ts"); !ts.IsInt() || ts.Int() != it.ts {
				m.fail("the feed returns %s with _ts %s, the model has %d", it.id, ts.JSON(), it.ts)
			}
		}
	}
	for i := 0; i < 8 && m.failures == 0; i++ {
		m.check(m.genQuery())
	}
	if m.failures > 0 {
		m.report()
		m.t.FailNow()
	}
	counts, err := m.e.CheckIndexes(m.ctx)
	if err != nil {
		m.fatal("CheckIndexes: %v", err)
	}
	c := counts["dbs/db/colls/c"]
	if c.Items-c.Expired != readable {
		m.fatal("CheckIndexes counts %d item records, %d of them expired; the model has %d readable items", c.Items, c.Expired, readable)
	}
}

// metaKeepSteps is how many of the last steps a failure report shows.
var metaKeepSteps = 30
