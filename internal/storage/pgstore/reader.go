package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// reader reads inside one transaction on one pooled connection. The
// transaction begins lazily, in the same round trip as the first read,
// together with a reading of the database's clock (storage.TxClock) and
// the keys named to Prefetch.
type reader struct {
	s     *Store
	ctx   context.Context
	conn  *pgxpool.Conn
	begin string // the BEGIN statement, sent with the first read
	begun bool
	// committed is set once the transaction's COMMIT succeeded.
	committed bool
	// failed is the first error a statement of the transaction met.
	failed error
	// overtaken is set when the transaction waited for a row it locks
	// ahead (storage.Read.Lock) and lost it to a transaction that
	// committed meanwhile: it did no work, and the row is free again.
	overtaken bool
	// own is the transaction whose writes this reader sees; nil in a View.
	own   *txn
	iters []*iter

	now     time.Time      // the database's clock as the transaction began
	pending []storage.Read // keys named to Prefetch, not yet fetched
	// got holds the stored value of every key read by Get or prefetched,
	// and nil for a key known absent: within the transaction's one
	// snapshot a key read once reads the same again.
	got map[string][]byte
}

// end closes the reader's iterators, rolls the transaction back unless it
// committed (or never began), and returns the connection to the pool.
func (r *reader) end() {
	for _, it := range r.iters {
		it.closed = true
	}
	if r.begun && !r.committed && r.conn.Conn().PgConn().TxStatus() != 'I' {
		r.s.roundTrips.Add(1)
		_, _ = r.conn.Exec(context.WithoutCancel(r.ctx), `ROLLBACK`)
	}
	// A connection left inside a transaction (its ROLLBACK failed) is
	// closed by the pool rather than reused.
	r.conn.Release()
}

// clockSQL reads the database's clock as the first statement of a
// transaction. statement_timestamp() is the time the statement arrived,
// taken before the statement takes the transaction's snapshot: an
// operation that judges expiry with it never judges at an instant later
// than the state it reads.
const clockSQL = `SELECT statement_timestamp()`

// clockWriteSQL is clockSQL for a write transaction, which also bounds how
// long the transaction may sit idle (Options.IdleWrite, $1 in
// milliseconds), with no round trip of its own.
const clockWriteSQL = `SELECT statement_timestamp(), set_config('idle_in_transaction_session_timeout', $1, true)`

// prefetchSQL reads the keys of $1, and for each pair of $2 and $3 the
// key $3 followed by the value under $2.
// Keys go as stored keys, and rows come back with their keys. A pointer
// is followed only to a key stored as it is (longkeys.go); keep leaves a
// longer one for Get to read.
var prefetchSQL = `SELECT coalesce(kx, k), v FROM mayfly_kv WHERE k = ANY($1::bytea[])
UNION ALL
SELECT f.k, f.v FROM unnest($2::bytea[], $3::bytea[]) AS q(ptr, via) JOIN mayfly_kv p ON p.k = q.ptr JOIN mayfly_kv f ON f.k = q.via || p.v AND length(q.via || p.v) <= ` + strconv.Itoa(headLen)

// lockSQL locks the rows of the keys of $1 that exist, for a write
// transaction that names them to Prefetch with Lock as it begins.
const lockSQL = `SELECT 1 FROM mayfly_kv WHERE k = ANY($1::bytea[]) ORDER BY k FOR UPDATE`

// Prefetch names keys to fetch with the next round trip.
func (r *reader) Prefetch(reads ...storage.Read) {
	for _, rd := range reads {
		r.pending = append(r.pending, storage.Read{Key: slices.Clone(rd.Key), Via: slices.Clone(rd.Via), Lock: rd.Lock})
	}
}

// TxNow returns the database's clock as the transaction began, beginning
// it (with whatever is named to Prefetch) when it has not yet.
func (r *reader) TxNow() (time.Time, bool, error) {
	if !r.begun || len(r.pending) > 0 {
		_, done, err := r.send("")
		if err != nil {
			return time.Time{}, true, fmt.Errorf("pgstore: read the clock: %w", err)
		}
		if err := done(); err != nil {
			return time.Time{}, true, fmt.Errorf("pgstore: read the clock: %w", err)
		}
	}
	return r.now, true, nil
}

// rows runs one query and returns its rows and the function that closes
// them.
func (r *reader) rows(sql string, args ...any) (pgx.Rows, func() error, error) {
	return r.send(sql, args...)
}

// scan runs a range scan, planned for its own bounds. A scan sent as a
// named prepared statement is planned once for any bounds after a few
// runs (a generic plan), and the bounds decide everything for it: such a
// plan took 12.6 ms on the server for the 0.05 ms first page of the
// change feed's version log. So a scan goes as an unnamed statement, after
// whatever the transaction has queued (BEGIN, the clock, prefetches) has
// gone in a round trip of its own; batches can only use named ones.
func (r *reader) scan(sql string, args ...any) (pgx.Rows, func() error, error) {
	if !r.begun || len(r.pending) > 0 {
		_, done, err := r.send("")
		if err != nil {
			return nil, nil, err
		}
		if err := done(); err != nil {
			return nil, nil, err
		}
	}
	return r.send(sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

// send makes one round trip: the BEGIN and the clock when the transaction
// has not begun, the prefetches named since the last round trip, and then
// sql (none when empty). It returns sql's rows and the function that
// closes them and the batch.
func (r *reader) send(sql string, args ...any) (pgx.Rows, func() error, error) {
	r.s.roundTrips.Add(1)
	if r.begun && len(r.pending) == 0 {
		rows, err := r.conn.Query(r.ctx, sql, args...)
		if err != nil {
			return nil, nil, r.classify(err)
		}
		return rows, func() error { rows.Close(); return r.classify(rows.Err()) }, nil
	}
	b := &pgx.Batch{}
	beginning := !r.begun
	if beginning {
		b.Queue(r.begin)
		if r.own != nil {
			b.Queue(clockWriteSQL, r.s.idleWrite)
		} else {
			b.Queue(clockSQL)
		}
	}
	r.begun = true
	pending := r.pending
	r.pending = nil
	var keys, ptrs, vias, locks [][]byte
	for _, rd := range pending {
		keys = append(keys, rd.Key)
		if rd.Via != nil {
			ptrs, vias = append(ptrs, rd.Key), append(vias, rd.Via)
		}
		if rd.Lock && beginning && r.own != nil {
			locks = append(locks, rd.Key)
		}
	}
	if len(locks) > 0 {
		b.Queue(lockSQL, storedKeys(locks))
	}
	if len(pending) > 0 {
		b.Queue(prefetchSQL, storedKeys(keys), storedKeys(ptrs), vias)
	}
	if sql != "" {
		b.Queue(sql, args...)
	}
	br := r.conn.SendBatch(r.ctx, b)
	fail := func(err error) (pgx.Rows, func() error, error) {
		_ = br.Close()
		return nil, nil, r.classify(err)
	}
	if beginning {
		if _, err := br.Exec(); err != nil {
			return fail(err)
		}
		var idle string
		dest := []any{&r.now}
		if r.own != nil {
			dest = append(dest, &idle)
		}
		if err := br.QueryRow().Scan(dest...); err != nil {
			return fail(err)
		}
	}
	if len(locks) > 0 {
		if _, err := br.Exec(); err != nil {
			r.overtaken = retryable(err)
			return fail(err)
		}
	}
	if len(pending) > 0 {
		if err := r.keep(br, pending); err != nil {
			return fail(err)
		}
	}
	if sql == "" {
		return nil, func() error { return r.classify(br.Close()) }, nil
	}
	rows, err := br.Query()
	if err != nil {
		return fail(err)
	}
	return rows, func() error {
		rows.Close()
		err := rows.Err()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return r.classify(err)
	}, nil
}

// classify classifies err (Store.classify) and records it as the
// transaction's failure: once a statement failed, PostgreSQL refuses the
// rest of the transaction, so it can no longer commit.
func (r *reader) classify(err error) error {
	err = r.s.classify(err)
	if err != nil && r.failed == nil {
		r.failed = err
	}
	return err
}

// keep reads the prefetch query's rows into r.got: every key asked for
// is then known, present or absent, and so is every pointer's target.
func (r *reader) keep(br pgx.BatchResults, pending []storage.Read) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	found := map[string][]byte{}
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			rows.Close()
			return err
		}
		if v == nil {
			v = []byte{}
		}
		found[string(k)] = v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if r.got == nil {
		r.got = map[string][]byte{}
	}
	for _, rd := range pending {
		v := found[string(rd.Key)]
		r.got[string(rd.Key)] = v
		if rd.Via != nil && v != nil {
			if target := append(slices.Clone(rd.Via), v...); !long(target) {
				r.got[string(target)] = found[string(target)]
			}
		}
	}
	return nil
}

// Get returns the value under key: the transaction's own write when there
// is one, else the stored value.
func (r *reader) Get(key []byte) ([]byte, error) {
	if r.own != nil {
		if w, ok := r.own.writes[string(key)]; ok {
			if w.del {
				return nil, storage.ErrNotFound
			}
			return w.value, nil
		}
	}
	if v, ok := r.got[string(key)]; ok {
		if v == nil {
			return nil, storage.ErrNotFound
		}
		return v, nil
	}
	rows, done, err := r.rows(`SELECT v FROM mayfly_kv WHERE k = $1`, storedKey(key))
	if err != nil {
		return nil, fmt.Errorf("pgstore: get: %w", err)
	}
	var v []byte
	found := false
	for rows.Next() {
		if err := rows.Scan(&v); err != nil {
			_ = done()
			return nil, fmt.Errorf("pgstore: get: %w", err)
		}
		found = true
	}
	if err := done(); err != nil {
		return nil, fmt.Errorf("pgstore: get: %w", err)
	}
	if found && v == nil {
		v = []byte{}
	}
	if r.got == nil {
		r.got = map[string][]byte{}
	}
	// The value may already sit in r.got from a prefetch of this round trip.
	if _, ok := r.got[string(key)]; !ok {
		r.got[string(key)] = v
	}
	if !found {
		return nil, storage.ErrNotFound
	}
	return v, nil
}

// GetMany reads keys in one round trip, with whatever the transaction
// has queued (storage.ManyGetter): the transaction's own writes and the
// values it holds already answer first. It keeps none of the values it
// reads, so a page that reads a whole container a run at a time holds one
// run, where Get keeps every value it read until the transaction ends.
// Networked reports that every read not batched is a round trip.
func (r *reader) Networked() bool { return true }

func (r *reader) GetMany(keys [][]byte, fn func(i int, value []byte) error) error {
	vals := make([][]byte, len(keys))
	known := make([]bool, len(keys))
	var ask [][]byte
	for i, k := range keys {
		if r.own != nil {
			if w, ok := r.own.writes[string(k)]; ok {
				if !w.del {
					vals[i] = w.value
				}
				known[i] = true
				continue
			}
		}
		if v, ok := r.got[string(k)]; ok {
			vals[i], known[i] = v, true
			continue
		}
		ask = append(ask, k)
	}
	if len(ask) > 0 {
		rows, done, err := r.rows(getManySQL, storedKeys(ask))
		if err != nil {
			return fmt.Errorf("pgstore: get many: %w", err)
		}
		found := make(map[string][]byte, len(ask))
		for rows.Next() {
			var k, v []byte
			if err := rows.Scan(&k, &v); err != nil {
				_ = done()
				return fmt.Errorf("pgstore: get many: %w", err)
			}
			if v == nil {
				v = []byte{}
			}
			found[string(k)] = v
		}
		if err := done(); err != nil {
			return fmt.Errorf("pgstore: get many: %w", err)
		}
		for i, k := range keys {
			if !known[i] {
				vals[i] = found[string(k)]
			}
		}
	}
	for i := range keys {
		if err := fn(i, vals[i]); err != nil {
			return err
		}
	}
	return nil
}

// ScanSpans reads the keys of spans that hold few keys each in a
// statement for up to 32 of them (storage.SpanScanner), where an iterator
// a span costs a round trip a span: a query on 50 ids read them in 50.
// A transaction with writes of its own, a bound past a long key's head,
// and a page that meets a long key read the spans (from there) one
// iterator at a time, which merge the writes and sort the long keys'
// groups; so do spans that fill a page of 64 keys.
func (r *reader) ScanSpans(spans []storage.Span, fn func(k, v []byte) (bool, error)) error {
	if r.own != nil && len(r.own.writes) > 0 || slices.ContainsFunc(spans, func(sp storage.Span) bool { return long(sp.Lower) || long(sp.Upper) }) {
		return storage.ScanEachSpan(r, spans, fn)
	}
	all := slices.Clone(spans)
	const size = 64
	for i := 0; i < len(all); { // all[i] is the first span not read to its end
		end := min(len(all), i+maxSpansAStatement)
		// A scan of the primary key's index a span, merged in key
		// order: an OR of the spans would be one scan of the index from
		// its start, or every span's rows sorted.
		var parts []string
		var args []any
		for _, sp := range all[i:end] {
			args = append(args, sp.Lower)
			c := fmt.Sprintf("k >= $%d", len(args))
			if sp.Upper != nil {
				args = append(args, sp.Upper)
				c += fmt.Sprintf(" AND k < $%d", len(args))
			}
			parts = append(parts, fmt.Sprintf("(SELECT k, kx, v FROM mayfly_kv WHERE %s ORDER BY k LIMIT %d)", c, size))
		}
		page, err := r.queryKV("SELECT k, kx, v FROM ("+strings.Join(parts, " UNION ALL ")+fmt.Sprintf(") s ORDER BY k LIMIT %d", size), args...)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(page, func(p storedKV) bool { return long(p.stored) }) {
			return storage.ScanEachSpan(r, all[i:], fn)
		}
		for _, p := range page {
			if more, err := fn(p.k, p.v); err != nil || !more {
				return err
			}
			for all[i].Upper != nil && bytes.Compare(p.k, all[i].Upper) >= 0 {
				i++
			}
			all[i].Lower = append(bytes.Clone(p.k), 0)
		}
		if len(page) < size {
			i = end // every span the statement named is read to its end
			continue
		}
		// Spans that fill a page are not few keys each: a statement
		// over them would read a page from every span to return one,
		// where an iterator a span reads its own.
		return storage.ScanEachSpan(r, all[i:], fn)
	}
	return nil
}

// maxSpansAStatement bounds the spans one statement of ScanSpans names.
const maxSpansAStatement = 32

// getManySQL reads the keys of $1 (stored keys), each row with its key.
const getManySQL = `SELECT coalesce(kx, k), v FROM mayfly_kv WHERE k = ANY($1::bytea[])`

// write is a buffered Set (value) or Delete (del).
type write struct {
	value []byte
	del   bool
}

// txn buffers its writes; reads see them over the stored state, and they
// are sent with the COMMIT.
type txn struct {
	reader
	writes map[string]write
	// undo holds, once a savepoint was taken, what each write since the
	// first one replaced (storage.Savepointer).
	undo    []undone
	marking bool
	// deadline, when set, is the instant on the store's clock the commit
	// must come before (storage.Deadliner).
	deadline time.Time
}

// CommitBefore makes the transaction commit only before t on the store's
// clock.
func (t *txn) CommitBefore(at time.Time) { t.deadline = at }

// Set stores value under key when the transaction commits.
func (t *txn) Set(key, value []byte) error {
	t.put(string(key), write{value: append([]byte{}, value...)})
	return nil
}

// Delete removes key when the transaction commits.
func (t *txn) Delete(key []byte) error {
	t.put(string(key), write{del: true})
	return nil
}

// put buffers w under key, keeping what it replaces while savepoints are
// in use.
func (t *txn) put(key string, w write) {
	if t.marking {
		prev, had := t.writes[key]
		t.undo = append(t.undo, undone{key: key, prev: prev, had: had})
	}
	t.writes[key] = w
}

// undone is a buffered write as it was before a write replaced it.
type undone struct {
	key  string
	prev write
	had  bool
}

// Savepoint marks the writes so far. Nothing is sent: the writes are
// still in memory, so taking them back needs no SAVEPOINT statement.
func (t *txn) Savepoint() (int, bool) {
	t.marking = true
	return len(t.undo), true
}

// RollbackTo takes back the writes made since savepoint sp, unless a
// statement of the transaction failed, which no savepoint undoes here.
func (t *txn) RollbackTo(sp int) error {
	if t.failed != nil {
		return t.failed
	}
	if sp < 0 || sp > len(t.undo) {
		return fmt.Errorf("pgstore: no savepoint %d", sp)
	}
	for i := len(t.undo) - 1; i >= sp; i-- {
		u := t.undo[i]
		if u.had {
			t.writes[u.key] = u.prev
		} else {
			delete(t.writes, u.key)
		}
	}
	t.undo = t.undo[:sp]
	return nil
}

// kv is a stored pair fetched by an iterator.
type kv struct{ k, v []byte }

// ovEntry is one of the transaction's writes an iterator merges in.
type ovEntry struct {
	key string
	w   write
}

// iter merges the stored keys in its range, fetched a page at a time, with
// the transaction's writes made before it was opened.
type iter struct {
	r            *reader
	lower, upper []byte
	reverse      bool

	ov []ovEntry // in iteration order
	oi int

	rows []kv
	ri   int
	more bool // the server may hold more past rows
	// from is the key the iteration was positioned at, included when
	// fromIncl; every key it yields is past it.
	from     []byte
	fromIncl bool
	// cursor is where the next page starts: a key (the first page), or,
	// when stored, the stored key of the last row read; nil: the range's
	// end.
	cursor   []byte
	incl     bool // the next page includes cursor
	stored   bool
	pageSize int

	key, value  []byte
	fromServer  bool
	fromOverlay bool
	valid       bool
	err         error
	closed      bool
}

// NewIter returns an iterator over [p.Lower, p.Upper).
func (r *reader) NewIter(p storage.IterParams) (storage.Iterator, error) {
	it := &iter{r: r, lower: slices.Clone(p.Lower), upper: slices.Clone(p.Upper), reverse: p.Reverse}
	if r.own != nil {
		for k, w := range r.own.writes {
			kb := []byte(k)
			if (it.lower != nil && bytes.Compare(kb, it.lower) < 0) || (it.upper != nil && bytes.Compare(kb, it.upper) >= 0) {
				continue
			}
			it.ov = append(it.ov, ovEntry{key: k, w: w})
		}
		slices.SortFunc(it.ov, func(a, b ovEntry) int { return it.cmp([]byte(a.key), []byte(b.key)) })
	}
	r.iters = append(r.iters, it)
	return it, nil
}

// cmp orders keys in the iteration's direction.
func (it *iter) cmp(a, b []byte) int {
	if it.reverse {
		return bytes.Compare(b, a)
	}
	return bytes.Compare(a, b)
}

// empty reports whether the range holds no key at all.
func (it *iter) empty() bool {
	return it.lower != nil && it.upper != nil && bytes.Compare(it.lower, it.upper) >= 0
}

// First positions at the first key in iteration order.
func (it *iter) First() bool {
	if it.reverse {
		return it.start(it.upper, false)
	}
	return it.start(it.lower, true)
}

// SeekGE positions at the first key >= key (in reverse, the last <= key).
// A seek ahead of the position to a key the fetched page already reaches
// moves within the page, without a round trip: walks that skip a few keys
// at a time (past a group of equal values) would otherwise pay one each.
func (it *iter) SeekGE(key []byte) bool {
	if ok, moved := it.seekFetched(key); moved {
		return ok
	}
	if it.reverse {
		if it.upper != nil && bytes.Compare(key, it.upper) >= 0 {
			return it.start(it.upper, false)
		}
		return it.start(key, true)
	}
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		return it.start(it.lower, true)
	}
	return it.start(key, true)
}

// seekFetched positions at key, in the iteration order ahead of the current
// key, when a row of the fetched page is at or past it; moved is false
// when it is not, and the iterator is left as it was.
func (it *iter) seekFetched(key []byte) (ok, moved bool) {
	if !it.valid || it.closed || it.err != nil || it.cmp(key, it.key) <= 0 {
		return false, false
	}
	rest := it.rows[it.ri:]
	i := sort.Search(len(rest), func(j int) bool { return it.cmp(rest[j].k, key) >= 0 })
	if i == len(rest) {
		return false, false
	}
	it.ri += i
	it.oi += sort.Search(len(it.ov)-it.oi, func(j int) bool { return it.cmp([]byte(it.ov[it.oi+j].key), key) >= 0 })
	return it.settle(), true
}

// start positions both streams at from (inclusive or not) and settles.
func (it *iter) start(from []byte, incl bool) bool {
	if it.closed {
		it.err = errors.New("pgstore: iterator used after its transaction ended")
		it.valid = false
		return false
	}
	it.err = nil
	it.rows, it.ri, it.pageSize = nil, 0, 16
	it.from, it.fromIncl = slices.Clone(from), incl
	it.cursor, it.incl, it.stored = it.from, incl, false
	it.more = !it.empty()
	// The overlay's first entry at or past from, in iteration order.
	it.oi = 0
	if from != nil {
		it.oi = sort.Search(len(it.ov), func(i int) bool {
			c := it.cmp([]byte(it.ov[i].key), from)
			return c > 0 || (c == 0 && incl)
		})
	}
	return it.settle()
}

// peek returns the next stored pair, fetching a page when needed.
func (it *iter) peek() (kv, bool) {
	for it.ri >= len(it.rows) {
		if !it.more || it.err != nil {
			return kv{}, false
		}
		it.fetch()
	}
	return it.rows[it.ri], true
}

// fetch reads the next page of stored pairs past the cursor. The bounds
// go to the server as bounds on stored keys, widened to whole groups of
// long keys (longkeys.go), and are then applied to the keys; a group the
// page ends in is read to its end, and every group is put in key order.
func (it *iter) fetch() {
	var conds []string
	var args []any
	arg := func(v []byte) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	op := func(fwd, back string) string {
		if it.reverse {
			return back
		}
		return fwd
	}
	if it.cursor != nil {
		bound, incl := it.cursor, it.incl
		if !it.stored {
			bound, incl = it.storedCursor()
		}
		switch {
		case bound == nil:
		case incl:
			conds = append(conds, "k "+op(">=", "<=")+" "+arg(bound))
		default:
			conds = append(conds, "k "+op(">", "<")+" "+arg(bound))
		}
	}
	if it.reverse && it.lower != nil {
		conds = append(conds, "k >= "+arg(lowerBound(it.lower)))
	}
	if !it.reverse && it.upper != nil {
		if end := upperBound(it.upper); end != nil {
			conds = append(conds, "k < "+arg(end))
		}
	}
	sql := "SELECT k, kx, v FROM mayfly_kv"
	if len(conds) > 0 {
		sql += " WHERE " + strings.Join(conds, " AND ")
	}
	sql += " ORDER BY k " + op("ASC", "DESC") + fmt.Sprintf(" LIMIT %d", it.pageSize)
	page, err := it.query(sql, args...)
	if err != nil {
		it.err = err
		return
	}
	it.more = len(page) == it.pageSize
	if n := len(page); it.more && long(page[n-1].stored) {
		// The rest of the group the page ends in.
		last := page[n-1].stored
		head := last[:headLen]
		var sql string
		var args []any
		switch end := prefixEnd(head); {
		case it.reverse:
			sql, args = "SELECT k, kx, v FROM mayfly_kv WHERE k < $1 AND k > $2 ORDER BY k DESC", []any{last, head}
		case end == nil:
			sql, args = "SELECT k, kx, v FROM mayfly_kv WHERE k > $1 ORDER BY k", []any{last}
		default:
			sql, args = "SELECT k, kx, v FROM mayfly_kv WHERE k > $1 AND k < $2 ORDER BY k", []any{last, end}
		}
		rest, err := it.query(sql, args...)
		if err != nil {
			it.err = err
			return
		}
		page = append(page, rest...)
	}
	if len(page) > 0 {
		it.cursor, it.incl, it.stored = page[len(page)-1].stored, false, true
	}
	it.pageSize = min(it.pageSize*4, 1024)
	// Each group in key order, then only the keys in range.
	for i := 0; i < len(page); {
		j := i + 1
		for j < len(page) && sameGroup(page[i].stored, page[j].stored) {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(page[i:j], func(a, b storedKV) int { return it.cmp(a.k, b.k) })
		}
		i = j
	}
	it.rows, it.ri = it.rows[:0], 0
	for _, p := range page {
		if it.inRange(p.k) {
			it.rows = append(it.rows, kv{k: p.k, v: p.v})
		}
	}
}

// storedCursor turns the cursor, a key, into a bound on stored keys and
// whether it is inclusive; nil for no bound. A long key's bound takes in
// its whole group, which inRange then cuts.
func (it *iter) storedCursor() ([]byte, bool) {
	c := it.cursor
	switch {
	case !long(c):
		return c, it.incl
	case it.reverse:
		return upperBound(c), false
	default:
		return lowerBound(c), true
	}
}

// inRange reports whether key k is within the iterator's bounds and past
// the key it was positioned at.
func (it *iter) inRange(k []byte) bool {
	if (it.lower != nil && bytes.Compare(k, it.lower) < 0) || (it.upper != nil && bytes.Compare(k, it.upper) >= 0) {
		return false
	}
	if it.from == nil {
		return true
	}
	c := it.cmp(k, it.from)
	return c > 0 || (c == 0 && it.fromIncl)
}

// storedKV is a row as the server holds it: its stored key, the key, the
// value.
type storedKV struct{ stored, k, v []byte }

// query runs a scan and returns its rows.
func (it *iter) query(sql string, args ...any) ([]storedKV, error) {
	return it.r.queryKV(sql, args...)
}

// queryKV runs a scan and returns its rows.
func (r *reader) queryKV(sql string, args ...any) ([]storedKV, error) {
	rows, done, err := r.scan(sql, args...)
	if err != nil {
		return nil, fmt.Errorf("pgstore: scan: %w", err)
	}
	var out []storedKV
	for rows.Next() {
		var p storedKV
		if err := rows.Scan(&p.stored, &p.k, &p.v); err != nil {
			_ = done()
			return nil, fmt.Errorf("pgstore: scan: %w", err)
		}
		if p.k == nil {
			p.k = p.stored
		}
		if p.v == nil {
			p.v = []byte{}
		}
		out = append(out, p)
	}
	if err := done(); err != nil {
		return nil, fmt.Errorf("pgstore: scan: %w", err)
	}
	return out, nil
}

// settle makes the current position the next live key of either stream.
func (it *iter) settle() bool {
	for {
		it.valid, it.fromServer, it.fromOverlay = false, false, false
		srv, hasSrv := it.peek()
		if it.err != nil {
			return false
		}
		hasOv := it.oi < len(it.ov)
		switch {
		case !hasSrv && !hasOv:
			return false
		case hasOv && (!hasSrv || it.cmp([]byte(it.ov[it.oi].key), srv.k) <= 0):
			e := it.ov[it.oi]
			it.fromOverlay = true
			if hasSrv && bytes.Equal([]byte(e.key), srv.k) {
				it.fromServer = true
			}
			if e.w.del {
				it.advance()
				continue
			}
			it.key, it.value, it.valid = []byte(e.key), e.w.value, true
			return true
		default:
			it.fromServer = true
			it.key, it.value, it.valid = srv.k, srv.v, true
			return true
		}
	}
}

// advance moves past the current key in the streams that hold it.
func (it *iter) advance() {
	if it.fromServer {
		it.ri++
	}
	if it.fromOverlay {
		it.oi++
	}
}

// Next moves to the next key.
func (it *iter) Next() bool {
	if !it.valid || it.closed {
		it.valid = false
		return false
	}
	it.advance()
	return it.settle()
}

func (it *iter) Key() []byte   { return it.key }
func (it *iter) Value() []byte { return it.value }
func (it *iter) Err() error    { return it.err }

// Close releases nothing on the server: pages are fetched whole.
func (it *iter) Close() error {
	it.valid = false
	return nil
}
