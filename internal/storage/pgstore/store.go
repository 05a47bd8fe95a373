// Package pgstore is the storage contract (package storage) over a
// database that speaks PostgreSQL's wire protocol, with pgx. Several Mayfly
// gateways can share one such database: it is then their only shared state,
// and its clock is their one clock (storage.Clocked, ttl.md B6).
//
// The layout is one table of byte keys and values, ordered bytewise as the
// contract orders them (bytea compares as unsigned bytes, then by length,
// as bytes.Compare does), and one table of named settings holding the
// schema version. View is a read-only REPEATABLE READ transaction (one
// snapshot); Update is a SERIALIZABLE transaction whose writes are kept in
// memory, read back by its own reads, and sent in one round trip with the
// commit; a serialization failure re-runs the function, a bounded number of
// times. The SQL stays inside what CockroachDB and YugabyteDB also accept:
// docs/design/storage.md lists each statement and why.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// SchemaVersion is the version of the tables this package reads and
// writes. A database holding a newer one is refused; an older one is
// migrated at Open.
//
//  1. mayfly_kv (k, v)
//  2. mayfly_kv gains kx, the key of a row whose k is a long key's head
//     and digest (longkeys.go)
const SchemaVersion = 2

// Options configures Open.
type Options struct {
	// URL is the connection string (postgres://… or key=value pairs).
	URL string
	// PoolSize is the most connections the store holds (default 16).
	PoolSize int
	// MaxRetries bounds how many times Update re-runs a transaction that
	// met a serialization failure before it returns storage.ErrConflict
	// (default 30).
	MaxRetries int
	// Logger receives retries and connection trouble at debug and warn
	// levels; nil discards them.
	Logger *slog.Logger
	// IdleWrite bounds how long a write transaction may sit idle between
	// its statements before PostgreSQL ends its session (default one
	// minute): a gateway that stops mid-transaction (paused, frozen,
	// cut off) holds its rows' locks no longer than that, and the other
	// gateways' writes to them go on. A live gateway's pauses are far
	// shorter: its requests end within their time-out (30 s by default).
	IdleWrite time.Duration
}

// Store is a storage.Store on PostgreSQL. Create it with Open.
type Store struct {
	pool       *pgxpool.Pool
	maxRetries int
	log        *slog.Logger
	idleWrite  string // Options.IdleWrite in milliseconds

	retries    atomic.Int64 // serialization failures re-run
	conflicts  atomic.Int64 // Updates that gave up with ErrConflict
	roundTrips atomic.Int64 // statements and batches sent

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

var (
	_ storage.Store   = (*Store)(nil)
	_ storage.Clocked = (*Store)(nil)
)

// Open connects, creates the tables when missing, and checks or migrates
// the schema version. An unreachable server is an error wrapping
// storage.ErrUnavailable.
func Open(ctx context.Context, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connection string: %w", err)
	}
	if opts.PoolSize <= 0 {
		opts.PoolSize = 16
	}
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = 30
	}
	if opts.IdleWrite <= 0 {
		opts.IdleWrite = time.Minute
	}
	opts.IdleWrite = max(opts.IdleWrite, time.Millisecond) // 0 would turn the bound off
	cfg.MaxConns = int32(opts.PoolSize)
	cfg.AfterConnect = planSettings
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	s := &Store{pool: pool, maxRetries: opts.MaxRetries, log: log, idleWrite: strconv.FormatInt(opts.IdleWrite.Milliseconds(), 10)}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w: pgstore: cannot reach PostgreSQL at %s: %w", storage.ErrUnavailable, redact(cfg), err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// planSettings sets how the connection's statements are planned. Every
// statement Mayfly sends reads keys of mayfly_kv by its primary key, so
// the right plan is known; the settings keep PostgreSQL's planner from
// choosing another on statistics that no longer hold. A server that
// refuses a setting (PostgreSQL before 12, or one that speaks the
// protocol without it) keeps its own choice; only a broken connection
// fails.
//
//   - plan_cache_mode = force_custom_plan: the statements of a batch go as
//     named prepared statements, and after five runs PostgreSQL may switch
//     such a statement to a generic plan kept for the connection's life,
//     chosen with the table's size as it was then. On a new database that
//     size is a page or two, so the plan scans the table or hashes it, and
//     keeps doing so as it grows until the next ANALYZE: measured, a point
//     operation's prefetch took 2.7 ms of the server's CPU instead of 0.1
//     ms in a minute of creates into a new database. Planning each run
//     costs less than that saved (create and read over a new database,
//     alternated: 515–536 µs of PostgreSQL CPU per create against 588–678
//     µs with generic plans once analyzed).
//   - enable_seqscan = off and max_parallel_workers_per_gather = 0: a
//     custom plan still rests on the table's statistics, and autovacuum
//     analyzes the table whenever enough rows changed, which may be just
//     after a dropped container's rows were deleted: thousands of pages, a
//     handful of rows. Planned on that, once the table had filled again, a
//     prefetch scanned the whole table for a few keys, or read them by the
//     index behind a Gather that started two parallel workers (9.6 ms for
//     0.03 ms of work): 6 to 10 times the server's CPU per point operation
//     (bench-postgres.sh, part 1, its second and third rounds), until the
//     next analysis. The first setting only makes a sequential scan cost
//     more than any index scan, so the planner takes the primary key
//     whenever it can; no statement here gains from parallel workers.
func planSettings(ctx context.Context, c *pgx.Conn) error {
	for _, set := range []string{`SET plan_cache_mode = force_custom_plan`, `SET enable_seqscan = off`, `SET max_parallel_workers_per_gather = 0`} {
		_, err := c.Exec(ctx, set)
		var refused *pgconn.PgError
		if err != nil && !errors.As(err, &refused) {
			return err
		}
	}
	return nil
}

// redact names the server of cfg without its password.
func redact(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// ErrSchemaTooNew is wrapped by Open's error when the database was written
// by a newer Mayfly.
var ErrSchemaTooNew = errors.New("pgstore: the database holds a newer Mayfly schema")

// migrate creates the tables when missing and brings the schema to
// SchemaVersion. Several gateways may start at once: the statements are
// idempotent and the whole runs in a retried serializable transaction.
func (s *Store) migrate(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		err := s.migrateOnce(ctx)
		if err == nil || errors.Is(err, ErrSchemaTooNew) || attempt >= 10 {
			return err
		}
		// Concurrent CREATE TABLE IF NOT EXISTS may collide in the
		// catalog; the next attempt finds the table.
		if sleepErr := sleepCtx(ctx, backoff(attempt)); sleepErr != nil {
			return err
		}
	}
}

func (s *Store) migrateOnce(ctx context.Context) error {
	// Tables that exist are not created again: a gateway may run as a
	// user that reads and writes them but may not create tables, once
	// their owner has made them.
	var made bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('mayfly_meta') IS NOT NULL AND to_regclass('mayfly_kv') IS NOT NULL`).Scan(&made); err != nil {
		return fmt.Errorf("pgstore: look for the schema: %w", s.classify(err))
	}
	stmts := []string{`INSERT INTO mayfly_meta (name, value) VALUES ('schema', '` + strconv.Itoa(SchemaVersion) + `') ON CONFLICT (name) DO NOTHING`}
	if !made {
		stmts = append([]string{
			`CREATE TABLE IF NOT EXISTS mayfly_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS mayfly_kv (k BYTEA PRIMARY KEY, kx BYTEA, v BYTEA NOT NULL)`,
		}, stmts...)
	}
	for _, stmt := range stmts {
		if _, err := s.pool.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("pgstore: create the schema: %w", s.classify(err))
		}
	}
	var v string
	if err := s.pool.QueryRow(ctx, `SELECT value FROM mayfly_meta WHERE name = 'schema'`).Scan(&v); err != nil {
		return fmt.Errorf("pgstore: read the schema version: %w", s.classify(err))
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("pgstore: the schema version %q is not a number: the database is not Mayfly's", v)
	}
	switch {
	case n > SchemaVersion:
		return fmt.Errorf("%w: it holds schema version %d, and this Mayfly reads version %d; run the newer Mayfly, or give this one another database", ErrSchemaTooNew, n, SchemaVersion)
	case n == 1:
		// Adding a column without a default rewrites nothing. A version 1
		// database holds no long keys: it could not store them.
		return s.migrateTo(ctx, 2, `ALTER TABLE mayfly_kv ADD COLUMN IF NOT EXISTS kx BYTEA`)
	case n < SchemaVersion:
		return fmt.Errorf("pgstore: schema version %d has no migration to %d", n, SchemaVersion)
	}
	return nil
}

// migrateTo runs stmts and raises the schema version to v in one
// transaction.
func (s *Store) migrateTo(ctx context.Context, v int, stmts ...string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: migrate the schema to version %d: %w", v, s.classify(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, stmt := range stmts {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("pgstore: migrate the schema to version %d: %w", v, s.classify(err))
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE mayfly_meta SET value = $1 WHERE name = 'schema'`, strconv.Itoa(v)); err != nil {
		return fmt.Errorf("pgstore: migrate the schema to version %d: %w", v, s.classify(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: migrate the schema to version %d: %w", v, s.classify(err))
	}
	return nil
}

// Stats are the store's counters, for metrics and benchmarks.
type Stats struct {
	Retries    int64 // serialization failures re-run
	Conflicts  int64 // Updates that gave up
	RoundTrips int64 // statements and batches sent
	PoolSize   int32
	PoolInUse  int32
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	ps := s.pool.Stat()
	return Stats{Retries: s.retries.Load(), Conflicts: s.conflicts.Load(), RoundTrips: s.roundTrips.Load(),
		PoolSize: ps.MaxConns(), PoolInUse: ps.AcquiredConns()}
}

// enter registers an in-flight call; the caller must call s.inflight.Done.
func (s *Store) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return storage.ErrClosed
	}
	s.inflight.Add(1)
	return nil
}

// Close waits for running calls and closes the pool.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return storage.ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	s.pool.Close()
	return nil
}

// Now reads the database's clock: the one clock of every gateway over it.
// clock_timestamp() is the time at the call, not at the transaction's
// start, so it moves on within a connection's session.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := s.enter(); err != nil {
		return time.Time{}, err
	}
	defer s.inflight.Done()
	var t time.Time
	s.roundTrips.Add(1)
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("pgstore: read the clock: %w", s.classify(err))
	}
	return t, nil
}

// View runs fn in a read-only REPEATABLE READ transaction: one snapshot.
func (s *Store) View(ctx context.Context, fn func(r storage.Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.inflight.Done()
	conn, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	r := &reader{s: s, ctx: ctx, conn: conn, begin: `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`}
	defer r.end()
	return fn(r)
}

// acquire takes a connection from the pool.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect: %w", s.classify(err))
	}
	return conn, nil
}

// Update runs fn in a SERIALIZABLE transaction, re-running it after a
// serialization failure with a growing, jittered pause, at most MaxRetries
// times; then it returns storage.ErrConflict.
func (s *Store) Update(ctx context.Context, fn func(tx storage.Txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.inflight.Done()
	failures, overtaken := 0, 0
	for {
		err := s.updateOnce(ctx, fn)
		if !retryable(err) {
			return err
		}
		if errors.Is(err, errOvertaken) && overtaken < maxOvertaken {
			// It did no work, and each such failure is another
			// transaction's commit, so these count apart from the
			// bound on failures; and the row it waited for was just
			// released, so it goes again at once.
			overtaken++
			s.retries.Add(1)
			if err := ctx.Err(); err != nil {
				return err
			}
			continue
		}
		if failures >= s.maxRetries {
			s.conflicts.Add(1)
			return fmt.Errorf("%w: gave up after %d serialization failures: %w", storage.ErrConflict, failures+overtaken+1, err)
		}
		s.retries.Add(1)
		s.log.Debug("transaction re-run after a serialization failure", "attempt", failures+1, "err", err)
		if err := sleepCtx(ctx, backoff(failures)); err != nil {
			return err
		}
		failures++
	}
}

// maxOvertaken bounds how often a transaction that locks a row ahead
// (storage.Read.Lock) may lose it to others that committed while it
// waited, before such losses count as serialization failures.
const maxOvertaken = 1000

// updateOnce runs fn once. The transaction begins with its first read (one
// round trip carries BEGIN and the read), and its writes travel with the
// COMMIT in one more: a transaction that only writes is one round trip.
func (s *Store) updateOnce(ctx context.Context, fn func(tx storage.Txn) error) error {
	conn, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	t := &txn{reader: reader{s: s, ctx: ctx, conn: conn, begin: `BEGIN ISOLATION LEVEL SERIALIZABLE`}, writes: map[string]write{}}
	t.reader.own = t
	// Also when fn panics: the transaction is rolled back and the
	// connection returned before the panic goes on.
	defer t.reader.end()
	if err := fn(t); err != nil {
		if t.overtaken && retryable(err) {
			return fmt.Errorf("%w: %w", errOvertaken, err)
		}
		return err
	}
	if len(t.writes) == 0 {
		return nil
	}
	var sets, longs, vals, dels [][]byte
	keys := make([]string, 0, len(t.writes))
	for k := range t.writes {
		keys = append(keys, k)
	}
	// Writing in key order makes two transactions that touch the same
	// keys lock them in the same order.
	sort.Strings(keys)
	for _, k := range keys {
		w, kb := t.writes[k], []byte(k)
		if w.del {
			dels = append(dels, storedKey(kb))
		} else {
			sets = append(sets, storedKey(kb))
			longs = append(longs, longKey(kb))
			vals = append(vals, w.value)
		}
	}
	b := &pgx.Batch{}
	if !t.begun {
		b.Queue(t.reader.begin)
	}
	if len(sets) > 0 {
		b.Queue(`INSERT INTO mayfly_kv (k, kx, v) SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[]) ON CONFLICT (k) DO UPDATE SET kx = excluded.kx, v = excluded.v`, sets, longs, vals)
	}
	if len(dels) > 0 {
		b.Queue(`DELETE FROM mayfly_kv WHERE k = ANY($1::bytea[])`, dels)
	}
	if !t.deadline.IsZero() {
		// The last statement before COMMIT, in the same round trip: it
		// fails (division by zero) once the store's clock reached the
		// deadline, and the failure aborts the transaction.
		b.Queue(`SELECT 1 / (CASE WHEN clock_timestamp() < $1 THEN 1 ELSE 0 END)`, t.deadline)
	}
	b.Queue(`COMMIT`)
	t.begun = true // whatever happens, the connection's state is checked at end
	s.roundTrips.Add(1)
	err = conn.SendBatch(ctx, b).Close()
	switch {
	case err == nil:
		t.committed = true
		return nil
	case retryable(err):
		return err
	case !t.deadline.IsZero() && isCode(err, "22012"):
		return errLate
	case unavailable(err):
		// The connection broke while the COMMIT may have been on its
		// way: whether the transaction committed is unknown.
		return fmt.Errorf("%w: pgstore: commit: %w", storage.ErrAmbiguousCommit, s.classify(err))
	}
	return fmt.Errorf("pgstore: commit: %w", err)
}

// DeleteRange deletes at most limit keys of [lower, upper), the smallest
// first (long keys that share their head in their digests' order), in one
// statement and one round trip, retried like an Update
// (storage.RangeDeleter). Fewer than limit deleted means none was left.
func (s *Store) DeleteRange(ctx context.Context, lower, upper []byte, limit int) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := s.enter(); err != nil {
		return false, err
	}
	defer s.inflight.Done()
	// The bounds on stored keys take in whole groups of long keys
	// (longkeys.go); the keys themselves are then cut to the range, so
	// within a group the order is the digests'.
	cond := `k >= $1 AND coalesce(kx, k) >= $3`
	args := []any{lowerBound(lower), limit, lower}
	if upper != nil {
		cond += ` AND coalesce(kx, k) < $4`
		args = append(args, upper)
		if end := upperBound(upper); end != nil {
			cond += ` AND k < $5`
			args = append(args, end)
		}
	}
	for attempt := 0; ; attempt++ {
		b := &pgx.Batch{}
		b.Queue(`BEGIN ISOLATION LEVEL SERIALIZABLE`)
		b.Queue(`DELETE FROM mayfly_kv WHERE k IN (SELECT k FROM mayfly_kv WHERE `+cond+` ORDER BY k LIMIT $2)`, args...)
		b.Queue(`COMMIT`)
		s.roundTrips.Add(1)
		n, err := s.sendDelete(ctx, b)
		if err == nil || !retryable(err) {
			return err == nil && n < limit, err
		}
		if attempt >= s.maxRetries {
			s.conflicts.Add(1)
			return false, fmt.Errorf("%w: gave up after %d serialization failures: %w", storage.ErrConflict, attempt+1, err)
		}
		s.retries.Add(1)
		if err := sleepCtx(ctx, backoff(attempt)); err != nil {
			return false, err
		}
	}
}

// sendDelete sends DeleteRange's batch on a connection of its own and
// returns the rows the DELETE removed.
func (s *Store) sendDelete(ctx context.Context, b *pgx.Batch) (int, error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer func() {
		// A failed statement leaves the transaction aborted: end it, so
		// the connection goes back to the pool rather than being closed.
		if conn.Conn().PgConn().TxStatus() != 'I' {
			s.roundTrips.Add(1)
			_, _ = conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
		}
		conn.Release()
	}()
	br := conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return 0, fmt.Errorf("pgstore: delete a range: %w", s.classify(err))
	}
	tag, err := br.Exec()
	if err != nil {
		_ = br.Close()
		return 0, fmt.Errorf("pgstore: delete a range: %w", s.classify(err))
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return 0, fmt.Errorf("pgstore: delete a range: %w", s.classify(err))
	}
	if err := br.Close(); err != nil {
		return 0, fmt.Errorf("pgstore: delete a range: %w", s.classify(err))
	}
	return int(tag.RowsAffected()), nil
}

// retryable reports a serialization failure or a deadlock: the
// transaction lost a race and may simply run again.
func retryable(err error) bool {
	return isCode(err, "40001") || isCode(err, "40P01") || errors.Is(err, errLate)
}

// errOvertaken fails an attempt that waited for a row it locked ahead
// and lost it to a transaction that committed meanwhile.
var errOvertaken = errors.New("pgstore: another transaction committed a row this one waited to lock")

// errLate fails an attempt that would have committed after its deadline
// (storage.Deadliner); like a serialization failure, it is retried.
var errLate = errors.New("pgstore: the commit would have come after its deadline")

// isCode reports a PostgreSQL error with SQLSTATE code.
func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// unavailable reports errors of the connection or of a server that cannot
// serve for now, as opposed to errors in what was asked.
func unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case len(pe.Code) == 5 && pe.Code[:2] == "08", // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, crash, cannot connect now
			pe.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

// classify wraps connection trouble with storage.ErrUnavailable, so the
// transport answers 503 and the SDKs retry; other errors pass unchanged.
func (s *Store) classify(err error) error {
	if unavailable(err) {
		s.log.Warn("PostgreSQL is unreachable or cannot serve", "err", err)
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	}
	return err
}

func backoff(attempt int) time.Duration {
	d := time.Millisecond << min(attempt, 7) // 1 ms … 128 ms
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
