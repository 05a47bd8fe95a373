// Package uring syncs files through a Linux io_uring ring, so that a
// goroutine waiting for a file's data to reach the disk parks on the
// runtime's network poller rather than holding a thread in a system call.
//
// Why it exists: a blocking fdatasync puts its thread in the scheduler's
// system-call state. After 20 µs the runtime's monitor (sysmon) takes the
// processor from it and wakes another thread to run it; the thread coming
// back from the sync finds no processor and goes to sleep; and while
// system calls keep blocking, the monitor keeps waking every 20 µs to
// look. On a write-ahead log synced a thousand times a second, that was
// half the context switches of a durable write, and each costs tens of
// microseconds on a virtual machine (docs/benchmarks.md, "The log's sync
// through io_uring"). With a ring the sync runs in the kernel's own worker
// and its completion is signalled on an eventfd, which the poller watches
// as it watches sockets.
//
// A Ring serves one sync at a time: Datasync holds it from submission to
// completion. The only caller on a hot path is the store's log writer,
// which syncs one log at a time.
package uring
