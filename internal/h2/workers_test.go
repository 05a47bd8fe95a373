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

// A handler that finds a worker idle runs on it: on a goroutine that ran
// an earlier handler, with the stack that one grew.
func TestWorkersReuseGoroutines(t *testing.T) {
	w := &workers{idleFor: time.Minute}
	ran := make(chan string)
	w.run(func() { ran <- goroutineID() })
	first := <-ran
	waitUntil(t, "the worker is idle", func() bool { return w.idle.Load() == 1 })
	w.run(func() { ran <- goroutineID() })
	if second := <-ran; second != first {
		t.Errorf("second handler ran on goroutine %s, not on the idle worker %s", second, first)
	}
}

// After a burst, at most maxIdle workers stay, and each ends once it has
// been idle for idleFor.
func TestWorkersIdleBound(t *testing.T) {
	w := &workers{idleFor: 50 * time.Millisecond, maxIdle: 3}
	release := make(chan struct{})
	var started, done sync.WaitGroup
	for range 8 {
		started.Add(1)
		done.Add(1)
		w.run(func() {
			defer done.Done()
			started.Done()
			<-release
		})
	}
	started.Wait() // eight workers at once: none was idle to take one
	close(release)
	done.Wait()
	waitUntil(t, "three workers are idle", func() bool { return w.idle.Load() == 3 })
	time.Sleep(10 * time.Millisecond)
	if n := w.idle.Load(); n > 3 {
		t.Fatalf("%d idle workers, want at most 3", n)
	}
	waitUntil(t, "the idle workers end", func() bool { return w.idle.Load() == 0 })
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
			waitUntil(t, "the worker is idle", func() bool { return ts.h2.workers.idle.Load() == 1 })
		}
	}
	if ids[0] != ids[1] {
		t.Errorf("handlers ran on goroutines %v, want one", ids)
	}
}
