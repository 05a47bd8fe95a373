package server

// requestStack is the frame growStack needs, which grows a request's
// goroutine stack to 32 KiB before it does any work. A goroutine starts
// with a small stack; a write reaches Pebble's commit path and the stack
// then doubles three or four times, each time copying every frame above it
// (12% of a create's CPU, measured). Growing it once, while it holds only
// the few frames of the transport, costs one copy of a shallow stack. It
// is the first thing the outermost handler does (requestMetrics.wrap): the
// metrics' own allocation needed a larger frame than a new goroutine has,
// and grew the stack once more before it. A goroutine that has served a
// request already (an HTTP/1.1 connection's, or one of internal/h2's
// workers) has the stack, and the call costs a frame.
const requestStack = 16 << 10

// stackIndex is read by growStack so the compiler keeps its frame.
var stackIndex int

// growStack needs a frame of requestStack bytes; calling it makes the
// runtime grow the caller's stack to fit that in one step.
//
//go:noinline
func growStack() byte {
	var frame [requestStack]byte
	return frame[stackIndex]
}
