package h2

import (
	"cmp"
	"sync"
	"sync/atomic"
	"time"
)

// workers runs handlers on goroutines that outlive them. A goroutine
// starts with a small stack, and a request grows it to tens of KiB on its
// way through the engine and the store (internal/server's growStack does
// that in one step): with a new goroutine per request, every request
// allocated, grew and freed that stack, 6% of a point read's CPU. A worker
// keeps its stack from one handler to the next. The collector shrinks the
// stacks of goroutines that use little of them, so a worker idle over
// several collections grows its stack again once.
//
// A handler goes to an idle worker when there is one and to a new worker
// otherwise, so no request waits for a worker. At most maxIdle workers
// wait for work, each for idleFor; the others end when their handler
// returns.
type workers struct {
	idleFor time.Duration // how long an idle worker waits; workerIdle if 0
	maxIdle int32         // maxIdleWorkers if 0

	once    sync.Once
	jobs    chan func() // unbuffered: a send succeeds only to a waiting worker
	idle    atomic.Int32
	running atomic.Int32 // workers, idle or not
}

const (
	// maxIdleWorkers bounds the goroutines, and their stacks, kept after
	// a burst of requests ends: a few times the streams of the clients a
	// server has at once.
	maxIdleWorkers = 256
	// workerIdle is how long an idle worker waits for a handler.
	workerIdle = 10 * time.Second
)

// run calls f on a worker.
func (w *workers) run(f func()) {
	w.once.Do(func() {
		w.jobs = make(chan func())
		w.idleFor = cmp.Or(w.idleFor, workerIdle)
		w.maxIdle = cmp.Or(w.maxIdle, maxIdleWorkers)
	})
	select {
	case w.jobs <- f:
	default:
		w.running.Add(1)
		go w.work(f)
	}
}

// work calls f, then the handlers given to it while it is idle, until it
// waits idleFor or finds maxIdle workers idle already.
func (w *workers) work(f func()) {
	defer w.running.Add(-1)
	var t *time.Timer
	for {
		f()
		if w.idle.Add(1) > w.maxIdle {
			w.idle.Add(-1)
			return
		}
		if t == nil {
			t = time.NewTimer(w.idleFor)
		} else {
			t.Reset(w.idleFor)
		}
		select {
		case f = <-w.jobs:
			w.idle.Add(-1)
		case <-t.C:
			w.idle.Add(-1)
			return
		}
	}
}
