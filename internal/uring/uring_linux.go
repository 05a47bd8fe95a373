//go:build linux

package uring

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's interface (include/uapi/linux/io_uring.h). The system call
// numbers are the same on every architecture.
const (
	sysSetup    = 425
	sysEnter    = 426
	sysRegister = 427

	opFsync         = 3 // IORING_OP_FSYNC
	fsyncDatasync   = 1 // IORING_FSYNC_DATASYNC
	registerEventfd = 4 // IORING_REGISTER_EVENTFD
	featSingleMmap  = 1 // IORING_FEAT_SINGLE_MMAP (Linux 5.4)

	offRings = 0          // IORING_OFF_SQ_RING, which also maps the completions with featSingleMmap
	offSQEs  = 0x10000000 // IORING_OFF_SQES

	sqeSize = 64
	cqeSize = 16

	// entries is the submission queue's size. One sync is in flight at a
	// time, so the smallest ring would do; the kernel rounds up to a
	// power of two and sizes the completion queue at twice this.
	entries = 4
)

type sqRingOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqRingOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqRingOffsets
	cqOff                                                                  cqRingOffsets
}

// sqe is a submission queue entry, with the fields a sync uses.
type sqe struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	opFlags  uint32
	userData uint64
	_        [3]uint64
}

// cqe is a completion queue entry.
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// Ring is an io_uring instance that syncs files. It is safe for
// concurrent use; syncs are served one at a time.
type Ring struct {
	mu     sync.Mutex
	closed bool
	fd     int
	rings  []byte   // the submission and completion rings, one mapping
	sqes   []byte   // the submission queue entries
	event  *os.File // eventfd the kernel signals on each completion
	next   uint64   // user data of the next submission

	sqTail, sqMask *uint32
	sqArray        []uint32
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []byte

	synced atomic.Int64 // syncs completed
}

// Open sets up a ring. It fails where io_uring is not available: kernels
// before 5.4, kernels built without it or with it disabled
// (kernel.io_uring_disabled), and sandboxes whose system-call filter
// refuses it (Docker's default profile does); the caller then syncs the
// usual way.
func Open() (*Ring, error) {
	var p params
	fd, _, errno := syscall.Syscall(sysSetup, entries, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd)}
	if err := r.setUp(&p); err != nil {
		r.release()
		return nil, err
	}
	return r, nil
}

func (r *Ring) setUp(p *params) error {
	if p.features&featSingleMmap == 0 {
		return errors.New("io_uring: the kernel is older than 5.4")
	}
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*cqeSize)
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	var err error
	if r.rings, err = unix.Mmap(r.fd, offRings, int(size), prot, flags); err != nil {
		return fmt.Errorf("io_uring: map the rings: %w", err)
	}
	if r.sqes, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries*sqeSize), prot, flags); err != nil {
		return fmt.Errorf("io_uring: map the submission entries: %w", err)
	}
	r.sqTail = r.word(p.sqOff.tail)
	r.sqMask = r.word(p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(r.word(p.sqOff.array), p.sqEntries)
	r.cqHead = r.word(p.cqOff.head)
	r.cqTail = r.word(p.cqOff.tail)
	r.cqMask = *r.word(p.cqOff.ringMask)
	r.cqes = r.rings[p.cqOff.cqes : p.cqOff.cqes+p.cqEntries*cqeSize]

	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("io_uring: eventfd: %w", err)
	}
	// Non-blocking, so reads of it go through the runtime's poller.
	r.event = os.NewFile(uintptr(efd), "io_uring-eventfd")
	arg := int32(efd)
	if _, _, errno := syscall.Syscall6(sysRegister, uintptr(r.fd), registerEventfd, uintptr(unsafe.Pointer(&arg)), 1, 0, 0); errno != 0 {
		return fmt.Errorf("io_uring: register the eventfd: %w", errno)
	}
	return nil
}

// word is the 32-bit word at offset off of the rings' mapping.
func (r *Ring) word(off uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&r.rings[off]))
}

// Datasync writes the data of the file open as fd, and the metadata
// needed to read it back, to stable storage, as fdatasync(2) does. It
// waits for the kernel to finish, however long that takes.
func (r *Ring) Datasync(fd uintptr) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return os.ErrClosed
	}
	r.next++
	id := r.next

	// This goroutine is the queue's only producer, so the tail it reads
	// is the one it last wrote.
	tail := *r.sqTail
	i := tail & *r.sqMask
	e := (*sqe)(unsafe.Pointer(&r.sqes[i*sqeSize]))
	*e = sqe{opcode: opFsync, fd: int32(fd), opFlags: fsyncDatasync, userData: id}
	r.sqArray[i] = i
	atomic.StoreUint32(r.sqTail, tail+1) // publishes the entry to the kernel

	for {
		n, _, errno := syscall.Syscall6(sysEnter, uintptr(r.fd), 1, 0, 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return fmt.Errorf("io_uring_enter: %w", errno)
		}
		if n != 1 {
			return fmt.Errorf("io_uring_enter: submitted %d entries, want 1", n)
		}
		break
	}

	var buf [8]byte
	for {
		if res, ok := r.reap(id); ok {
			if res < 0 {
				return syscall.Errno(-res)
			}
			r.synced.Add(1)
			return nil
		}
		// Parks until the kernel signals a completion. A count left
		// from an earlier completion wakes it early; it then finds
		// nothing and reads again.
		if _, err := r.event.Read(buf[:]); err != nil {
			return fmt.Errorf("io_uring: wait for the eventfd: %w", err)
		}
	}
}

// reap consumes the completions queued and reports the result of the one
// for submission id, if it was among them.
func (r *Ring) reap(id uint64) (res int32, found bool) {
	head := *r.cqHead // the queue's only consumer
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := (*cqe)(unsafe.Pointer(&r.cqes[(head&r.cqMask)*cqeSize]))
		if c.userData == id {
			res, found = c.res, true
		}
	}
	atomic.StoreUint32(r.cqHead, head) // hands the entries back
	return res, found
}

// Synced is the number of syncs the ring has completed.
func (r *Ring) Synced() int64 { return r.synced.Load() }

// Close releases the ring after any sync in progress finishes. Datasync
// fails afterwards.
func (r *Ring) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return os.ErrClosed
	}
	r.closed = true
	return r.release()
}

func (r *Ring) release() error {
	var errs []error
	if r.event != nil {
		errs = append(errs, r.event.Close())
	}
	if r.sqes != nil {
		errs = append(errs, unix.Munmap(r.sqes))
	}
	if r.rings != nil {
		errs = append(errs, unix.Munmap(r.rings))
	}
	errs = append(errs, unix.Close(r.fd))
	return errors.Join(errs...)
}
