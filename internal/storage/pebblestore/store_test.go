package pebblestore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/storage/storagetest"
)

func openDisk(t *testing.T) storage.Store {
	t.Helper()
	s, err := pebblestore.Open(pebblestore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func openMem(t *testing.T) storage.Store {
	t.Helper()
	s, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformanceOnDisk(t *testing.T) {
	storagetest.Run(t, openDisk)
}

func TestConformanceInMemory(t *testing.T) {
	storagetest.Run(t, openMem)
}

// TestConformanceHot runs the contract with every key hot, so that every
// read goes through the kept values and every write invalidates them.
func TestConformanceHot(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		t.Helper()
		s, err := pebblestore.Open(pebblestore.Options{InMemory: true, Hot: func([]byte) bool { return true }})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

func TestOpenNeedsDir(t *testing.T) {
	if _, err := pebblestore.Open(pebblestore.Options{}); err == nil {
		t.Fatal("Open without Dir or InMemory succeeded")
	}
}

func TestReopenKeepsData(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	err = s.Update(context.Background(), func(tx storage.Txn) error {
		return tx.Set([]byte("k"), []byte("v"))
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s, err = pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	err = s.View(context.Background(), func(r storage.Reader) error {
		v, err := r.Get([]byte("k"))
		if err != nil {
			return err
		}
		if string(v) != "v" {
			t.Errorf("k = %q after reopening, want v", v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
}

func TestOpenTwiceFails(t *testing.T) {
	dir := t.TempDir()
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if s2, err := pebblestore.Open(pebblestore.Options{Dir: dir}); err == nil {
		s2.Close()
		t.Fatal("a second Open of the same directory succeeded")
	}
}

func TestDiskUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) storage.Store
	}{{"on disk", openDisk}, {"in memory", openMem}} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.open(t).(*pebblestore.Store)
			defer s.Close()
			before, err := s.DiskUsage()
			if err != nil {
				t.Fatalf("DiskUsage: %v", err)
			}
			value := make([]byte, 1<<20)
			err = s.Update(context.Background(), func(tx storage.Txn) error {
				return tx.Set([]byte("big"), value)
			})
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			after, err := s.DiskUsage()
			if err != nil {
				t.Fatalf("DiskUsage: %v", err)
			}
			if after < before+1<<20 {
				t.Errorf("DiskUsage went from %d to %d after writing 1 MiB", before, after)
			}
		})
	}
}

// A writer waiting for the write lock gives up when its context ends.
func TestUpdateWaitingForLockHonoursContext(t *testing.T) {
	s := openMem(t)
	defer s.Close()
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.Update(context.Background(), func(storage.Txn) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan error)
	go func() {
		waiting <- s.Update(ctx, func(storage.Txn) error {
			t.Error("the function of a cancelled Update ran")
			return nil
		})
	}()
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Errorf("waiting Update = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("Update = %v", err)
	}
}

// Using a Txn or an iterator after the function returned fails instead of
// touching a released batch.
func TestUseAfterFunctionReturns(t *testing.T) {
	s := openMem(t)
	defer s.Close()
	var leaked storage.Txn
	var it storage.Iterator
	err := s.Update(context.Background(), func(tx storage.Txn) error {
		leaked = tx
		var err error
		it, err = tx.NewIter(storage.IterParams{}) // left open on purpose
		if err != nil {
			return err
		}
		return tx.Set([]byte("a"), []byte("1"))
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if _, err := leaked.Get([]byte("a")); err == nil {
		t.Error("Get on a finished Txn succeeded")
	}
	if err := leaked.Set([]byte("b"), []byte("2")); err == nil {
		t.Error("Set on a finished Txn succeeded")
	}
	if it.First() {
		t.Error("First on an iterator of a finished Txn succeeded")
	}
	if it.Err() == nil {
		t.Error("iterator of a finished Txn reports no error")
	}
}

// A writer waiting for the write lock when the store closes gives up with
// ErrClosed instead of running after Close has begun.
func TestCloseReleasesWaitingWriters(t *testing.T) {
	s := openMem(t)
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- s.Update(context.Background(), func(storage.Txn) error {
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	waiting := make(chan error)
	go func() {
		waiting <- s.Update(context.Background(), func(storage.Txn) error {
			t.Error("a writer ran after Close began")
			return nil
		})
	}()
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	if err := <-waiting; !errors.Is(err, storage.ErrClosed) {
		t.Errorf("waiting Update = %v, want ErrClosed", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("running Update = %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close = %v", err)
	}
}
