package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestSyncLog appends from many goroutines at once: each append returns only
// once a sync covers it, and the file holds every body.
func TestSyncLog(t *testing.T) {
	dir := t.TempDir()
	l, err := openSyncLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	returned := uint64(0)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := l.append([]byte{byte('a' + w)}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				returned++
				// Every append that has returned is durable, this one
				// included.
				if _, d, _ := l.stats(); d < returned {
					t.Errorf("%d appends returned, %d durable", returned, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "floor.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != writers*each {
		t.Fatalf("the log holds %d bytes, want %d", len(data), writers*each)
	}
	for w := range writers {
		if n := bytes.Count(data, []byte{byte('a' + w)}); n != each {
			t.Errorf("writer %d: %d bodies in the log, want %d", w, n, each)
		}
	}
}

// TestSyncLogFailure: once the file cannot be written, appends fail rather
// than hang or report success.
func TestSyncLogFailure(t *testing.T) {
	l, err := openSyncLog(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.append([]byte("x")); err == nil {
		t.Fatal("append to a closed log succeeded")
	}
}
