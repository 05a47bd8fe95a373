package h2

import (
	"bytes"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"
)

// goroutineID is the number runtime.Stack gives the calling goroutine.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(bytes.TrimPrefix(buf, []byte("goroutine ")), []byte(" "))
	return string(id)
}

// waitParked waits until goroutine id waits in a select: a worker waiting
// for its next handler. Until then a handler would go to a new worker.
func waitParked(t *testing.T, id string) {
	t.Helper()
	waitUntil(t, "goroutine "+id+" waits for a handler", func() bool {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		return bytes.Contains(buf, []byte("goroutine "+id+" [select"))
	})
}

// A handler that finds a worker idle runs on it: on a goroutine that ran
// an earlier handler, with the stack that one grew.
func TestWorkersReuseGoroutines(t *testing.T) {
	w := &workers{idleFor: time.Minute}
	ran := make(chan string)
	w.run(func() { ran <- goroutineID() })
	first := <-ran
	waitParked(t, first)
	w.run(func() { ran <- goroutineID() })
	if second := <-ran; second != first {
		t.Errorf("second handler ran on goroutine %s, not on the idle worker %s", second, first)
	}
}

// After a burst, at most maxIdle workers stay.
func TestWorkersIdleBound(t *testing.T) {
	w := &workers{idleFor: time.Minute, maxIdle: 3}
	release := make(chan struct{})
	var started sync.WaitGroup
	for range 8 {
		started.Add(1)
		w.run(func() {
			started.Done()
			<-release
		})
	}
	started.Wait()
	if n := w.running.Load(); n != 8 {
		t.Fatalf("%d workers for eight handlers at once, want 8", n)
	}
	close(release)
	waitUntil(t, "the workers past the bound end", func() bool { return w.running.Load() == 3 })
	if n := w.idle.Load(); n != 3 {
		t.Errorf("%d idle workers, want 3", n)
	}
}

// A worker idle for idleFor ends.
func TestWorkersIdleEnd(t *testing.T) {
	w := &workers{idleFor: 20 * time.Millisecond}
	done := make(chan struct{})
	w.run(func() { close(done) })
	<-done
	waitUntil(t, "the idle worker ends", func() bool { return w.running.Load() == 0 })
	if n := w.idle.Load(); n != 0 {
		t.Errorf("%d idle workers after the last ended", n)
	}
}

// The server runs a connection's handlers on its workers: one request
// after another runs on the same goroutine.
func TestHandlersRunOnWorkers(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids = append(ids, goroutineID())
		mu.Unlock()
	}))
	c := ts.client(t)
	for i := range 2 {
		resp, err := c.Get(ts.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if i == 0 {
			mu.Lock()
			first := ids[0]
			mu.Unlock()
			waitParked(t, first)
		}
	}
	if ids[0] != ids[1] {
		t.Errorf("handlers ran on goroutines %v, want one", ids)
	}
}
