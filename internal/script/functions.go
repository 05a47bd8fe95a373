package script

import (
	"fmt"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// Functions calls a container's user-defined functions for one query:
// each function is compiled once per process (by its source) and
// instantiated once per query, in a runtime of the query's own, under one
// time limit for all its calls.
type Functions struct {
	load    func(name string) (src string, err error)
	limit   time.Duration
	vm      *goja.Runtime
	stop    *time.Timer
	unwatch func() // takes vm off the memory guard
	fns     map[string]goja.Callable
	guards  *guards
}

// NewFunctions returns the functions load finds by name, to be called
// within limit (default 5 s) in all.
func NewFunctions(load func(name string) (string, error), limit time.Duration) *Functions {
	if limit <= 0 {
		limit = maxScriptTime
	}
	return &Functions{load: load, limit: limit, fns: map[string]goja.Callable{}}
}

// programs caches compiled script sources (compiled): a replaced script
// has another source, so it is compiled anew, and a deleted one is never
// asked for again.
var programs sync.Map // source → *goja.Program

// Call calls function name with args (JSON values) and returns its result
// as JSON, nil for undefined.
func (f *Functions) Call(name string, args [][]byte) ([]byte, error) {
	if f.vm == nil {
		f.vm = goja.New()
		f.vm.SetMaxCallStackSize(maxCallDepth)
		var err error
		if f.guards, err = guardParsers(f.vm); err != nil {
			return nil, err
		}
		vm := f.vm
		f.stop = time.AfterFunc(f.limit, func() { vm.Interrupt(ErrTimeout) })
		f.unwatch = watch(vm)
	}
	fn, ok := f.fns[name]
	if !ok {
		src, err := f.load(name)
		if err != nil {
			return nil, err
		}
		prog, err := compiled("udf."+name, src)
		if err != nil {
			return nil, err
		}
		if err := f.guards.compiling(src); err != nil {
			return nil, f.fail(err)
		}
		v, err := f.vm.RunProgram(prog)
		if err != nil {
			return nil, f.fail(err)
		}
		if fn, ok = goja.AssertFunction(v); !ok {
			return nil, &ScriptError{Message: "udf." + name + " is not a function"}
		}
		f.fns[name] = fn
	}
	vals := make([]goja.Value, len(args))
	for i, a := range args {
		if a == nil {
			vals[i] = goja.Undefined()
			continue
		}
		v, err := f.guards.parse(goja.Undefined(), f.vm.ToValue(string(a)))
		if err != nil {
			return nil, f.fail(err)
		}
		vals[i] = v
	}
	out, err := fn(goja.Undefined(), vals...)
	if err != nil {
		return nil, f.fail(err)
	}
	if goja.IsUndefined(out) {
		return nil, nil
	}
	s, err := f.guards.stringify(goja.Undefined(), out)
	if err != nil {
		return nil, f.fail(err)
	}
	if goja.IsUndefined(s) {
		return nil, nil
	}
	return []byte(s.String()), nil
}

// Close releases the query's runtime.
func (f *Functions) Close() {
	if f.stop != nil {
		f.stop.Stop()
		f.unwatch()
	}
}

func (f *Functions) fail(err error) error {
	if e, ok := scriptFailure(err); ok {
		return e
	}
	return fmt.Errorf("udf: %w", err)
}
