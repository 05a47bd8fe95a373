package pebblestore_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

func openBench(b *testing.B) *pebblestore.Store {
	b.Helper()
	s, err := pebblestore.Open(pebblestore.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkUpdate commits one 16-byte key and 100-byte value per Update,
// synced, from 1, 8 and 64 concurrent writers. With group commit the
// throughput grows with the writer count, because writers share fsyncs.
func BenchmarkUpdate(b *testing.B) {
	value := make([]byte, 100)
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openBench(b)
			ctx := context.Background()
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range writers {
				wg.Go(func() {
					key := make([]byte, 16)
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						binary.BigEndian.PutUint64(key, uint64(i))
						err := s.Update(ctx, func(tx storage.Txn) error { return tx.Set(key, value) })
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkGet reads random keys out of 100,000, one View per read, as the
// engine does for a point read.
func BenchmarkGet(b *testing.B) {
	const keys = 100_000
	s := openBench(b)
	ctx := context.Background()
	value := make([]byte, 100)
	for start := 0; start < keys; start += 10_000 {
		err := s.Update(ctx, func(tx storage.Txn) error {
			key := make([]byte, 16)
			for i := start; i < start+10_000; i++ {
				binary.BigEndian.PutUint64(key, uint64(i))
				if err := tx.Set(key, value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	key := make([]byte, 16)
	for b.Loop() {
		binary.BigEndian.PutUint64(key, uint64(rand.IntN(keys)))
		err := s.View(ctx, func(r storage.Reader) error {
			_, err := r.Get(key)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
