package script

import (
	"errors"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// goja has no bound on what a script allocates: `while (true) a.push(new
// Array(1e6))` grows the process until the time limit stops it, seconds
// and gigabytes later. Go cannot tell which goroutine allocated what, so
// the bound is the process's: while scripts run, the heap may grow at most
// MemoryLimit beyond what it held when the earliest of them started; past
// that, every script running is stopped with ErrMemory. A guard samples
// the heap every memoryPoll while any script runs, and not otherwise.

// MemoryLimit is how far the heap may grow while scripts run. A variable
// so that tests can lower it; set it before any script runs.
var MemoryLimit uint64 = 256 << 20

// ErrMemory ends the scripts running when the heap outgrew MemoryLimit.
var ErrMemory = errors.New("the script used more memory than a script may")

const memoryPoll = 5 * time.Millisecond

// heapSample is the metric the guard reads: the bytes of heap objects,
// live or not yet swept, which grows with every allocation at once (the
// live heap is known only after a collection).
const heapSample = "/memory/classes/heap/objects:bytes"

type guard struct {
	mu       sync.Mutex
	running  map[*goja.Runtime]uint64 // each script's runtime → the heap when it started
	sampling bool
}

var memGuard = &guard{running: map[*goja.Runtime]uint64{}}

func heapBytes() uint64 {
	s := []metrics.Sample{{Name: heapSample}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// watch puts vm under the guard until the returned function is called.
func watch(vm *goja.Runtime) (unwatch func()) {
	g := memGuard
	start := heapBytes()
	g.mu.Lock()
	g.running[vm] = start
	if !g.sampling {
		g.sampling = true
		go g.sample()
	}
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.running, vm)
		g.mu.Unlock()
	}
}

// sample runs while any script runs.
func (g *guard) sample() {
	t := time.NewTicker(memoryPoll)
	defer t.Stop()
	for range t.C {
		g.mu.Lock()
		if len(g.running) == 0 {
			g.sampling = false
			g.mu.Unlock()
			return
		}
		base := ^uint64(0)
		for _, b := range g.running {
			base = min(base, b)
		}
		if heapBytes() > base+MemoryLimit {
			for vm := range g.running {
				vm.Interrupt(ErrMemory)
				delete(g.running, vm)
			}
		}
		g.mu.Unlock()
	}
}
