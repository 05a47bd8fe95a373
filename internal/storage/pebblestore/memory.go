package pebblestore

import (
	"sync/atomic"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/memory"
)

// Block cache bounds. The cache is filled as blocks are read, so a large
// bound costs nothing until the data is there to fill it.
const (
	minCacheSize = 64 << 20
	maxCacheSize = 8 << 30
)

// defaultCacheSize is an eighth of the memory this process may use. A purge
// or a scan walks far more blocks than a small cache holds, and a cache
// that keeps evicting costs more CPU than the reads it serves.
func defaultCacheSize() int64 {
	return min(max(memory.Available()/8, minCacheSize), maxCacheSize)
}

// memTableCharge is what Pebble charges its memtables to the block cache
// in the steady state: each memtable it holds counts at its full size, and
// it holds two, the mutable one and the one it keeps for reuse after a
// flush (while flushes lag behind, more, and the blocks have less for that
// time). Before this was added to the cache's size, a cache no larger than
// two memtables kept no blocks at all: every read went to the files and
// decompressed its blocks again.
func memTableCharge(memTableSize uint64) int64 {
	return 2 * int64(memTableSize)
}

// callSoon returns a function that calls fn once, delay on c after the
// first of a burst of calls. Flushes, compactions and deleted tables free
// the store's buffers and evicted blocks in bursts, and between them the
// freed pages are reused where they are; a dropped container's spans are
// deleted one after another, and one flush after them all is enough.
func callSoon(c clock.Clock, delay time.Duration, fn func()) func() {
	var pending atomic.Bool
	return func() {
		if pending.CompareAndSwap(false, true) {
			due := c.After(delay)
			go func() {
				<-due
				pending.Store(false)
				fn()
			}()
		}
	}
}

// MemoryUse is what the store holds in memory outside the Go heap, in
// bytes. Memtable arenas count at their full size: an arena's pages become
// resident as it fills, and stay so once filled, recycled or not.
type MemoryUse struct {
	// MemTables is the arenas of the memtables in use: the mutable one
	// and those waiting to be flushed.
	MemTables int64
	// Recycled is the arenas of flushed memtables that Pebble keeps, one
	// at most, for the next memtable of the same size, and those iterators
	// still read.
	Recycled int64
	// BlockCache is the cached blocks of the tables.
	BlockCache int64
}

// MemoryUse reports the store's memory outside the Go heap.
func (s *Store) MemoryUse() MemoryUse {
	m := s.db.Metrics()
	return MemoryUse{MemTables: int64(m.MemTable.Size), Recycled: int64(m.MemTable.ZombieSize), BlockCache: m.BlockCache.Size}
}
