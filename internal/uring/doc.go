// Package uring syncs files through a Linux io_uring ring, so that a
// goroutine waiting for a file's data to reach the disk parks on the
// runtime's network poller rather than holding a thread in a system call.
//
// Why it exists: a blocking fdatasync puts its thread in the scheduler's
// system-call state. Once it has lasted 20 µs the runtime's monitor
// (sysmon) may take the processor from it and wake another thread to run
// it, and the thread coming back from the sync then finds no processor and
// sleeps. On a write-ahead log synced a thousand times a second, each such
// hand-off is a context switch, which costs tens of microseconds on a
// virtual machine. Through a ring the sync runs in the kernel's own worker
// and its completion is signalled on an eventfd, which the poller watches
// as it watches sockets: under make bench's creates, a quarter fewer futex
// calls and about 7% less CPU per create (docs/benchmarks.md, "The log's
// sync through io_uring"). The monitor's own wake-ups stay.
//
// A Ring serves one sync at a time: Datasync holds it from submission to
// completion. The only caller on a hot path is the store's log writer,
// which syncs one log at a time.
package uring
