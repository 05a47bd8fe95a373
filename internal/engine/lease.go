package engine

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// Background work on a container (the TTL purge, the index build) has one
// owner at a time among the gateways sharing a store: the holder of the
// container's lease for that job. A lease is a record in the store,
//
//	'y'+job+collRid(8) → {owner, token, expires}
//
// read and written inside the very transaction that does the work, so the
// work commits only while its gateway holds the lease. Serializable
// transactions already keep two gateways from deleting the same item
// twice; the lease keeps them from doing the same work side by side (and
// spending a purge budget each), and the fencing token refuses a holder
// that lost the lease while it was paused: whoever takes a lapsed lease
// raises the token, and a transaction commits work only under the token
// its gateway last took.
//
// Expiry is judged by the store's clock (Engine.Now), like item expiry, so
// skewed gateways agree on when a lease lapsed. A holder renews its lease
// from the transactions that do the work, when less than half its term is
// left; an idle holder lets it lapse, so a gateway that sees work the
// holder does not (a write made through it) takes over within one term.
//
// Only a store shared by several gateways needs leases, and such a store
// owns the clock (storage.Clocked); a store that is not Clocked belongs to
// one process (Pebble locks its directory), whose jobs run unleased, so a
// restart does not wait for the lease of its previous run to lapse.
const famLease = 'y'

// Jobs that run under a lease.
const (
	jobPurge byte = 'p'
	jobIndex byte = 'x'
)

// DefaultLeaseTerm is how long a lease lasts unless renewed: after a
// holder dies, another gateway takes its work over within this term plus
// one pass of its own loop.
const DefaultLeaseTerm = 3 * time.Second

func leaseKey(job byte, collRid []byte) []byte {
	k := make([]byte, 0, 2+len(collRid))
	return append(append(k, famLease, job), collRid...)
}

// leaseRecord is a lease as stored. Expires is in Unix nanoseconds of the
// store's clock.
type leaseRecord struct {
	Owner   string `json:"owner"`
	Token   uint64 `json:"token"`
	Expires int64  `json:"expires"`
}

// leases is this engine's side of the leases: its owner name (host, pid
// and a random part: unique per process), and the token it last took for each lease it holds.
type leases struct {
	owner string
	term  time.Duration
	mu    sync.Mutex
	held  map[string]uint64 // by lease key; guarded by mu
}

func newLeases(term time.Duration) *leases {
	if term <= 0 {
		term = DefaultLeaseTerm
	}
	// Host and process id tell an operator who holds a lease; the random
	// part keeps a restarted process with a reused pid distinct.
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	owner := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	return &leases{owner: owner, term: term, held: map[string]uint64{}}
}

// grant is the outcome of leases.hold inside a transaction.
type grant struct {
	key   []byte
	ok    bool          // the transaction may do the work
	token uint64        // the token held when ok
	wait  time.Duration // when refused, how long the other holder's lease lasts
}

// hold takes or renews the lease key inside tx at now, the store's time;
// with a nil l (a store of one process) it grants at once. It refuses (ok false, no error) while another owner, or an older token
// of this one, holds a lease that has not expired. The caller must pass
// the grant to commit once tx has committed.
func (l *leases) hold(tx storage.Txn, key []byte, now time.Time) (grant, error) {
	if l == nil {
		return grant{ok: true}, nil
	}
	var rec leaseRecord
	found, err := getJSON(tx, key, &rec)
	if err != nil {
		return grant{}, err
	}
	l.mu.Lock()
	mine, had := l.held[string(key)]
	l.mu.Unlock()
	n := now.UnixNano()
	live := found && n < rec.Expires
	switch {
	case live && rec.Owner == l.owner && had && rec.Token == mine:
		if time.Duration(rec.Expires-n) > l.term/2 {
			return grant{key: key, ok: true, token: mine}, nil
		}
	case live:
		return grant{key: key, wait: time.Duration(rec.Expires - n)}, nil
	default:
		rec.Token++ // a lapsed or new lease: the token fences off its last holder
		rec.Owner = l.owner
	}
	rec.Expires = n + int64(l.term)
	if err := setJSON(tx, key, &rec); err != nil {
		return grant{}, err
	}
	return grant{key: bytes.Clone(key), ok: true, token: rec.Token}, nil
}

// commit records a granted lease after its transaction committed.
func (l *leases) commit(g grant) {
	if l == nil || g.key == nil {
		return
	}
	l.mu.Lock()
	l.held[string(g.key)] = g.token
	l.mu.Unlock()
}

// forget drops what the engine remembers of the leases of a removed
// container.
func (l *leases) forget(collRid []byte) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, job := range []byte{jobPurge, jobIndex} {
		delete(l.held, string(leaseKey(job, collRid)))
	}
}
