package memory

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// UnmapExecutable drops the pages of the running executable's code and
// read-only data from this process's page tables, and has the kernel map
// them back one page at a time as they are used rather than in blocks
// around each fault. It returns how many bytes of mappings it advised.
//
// The binary is some 40 MB, and the kernel maps up to 64 KiB around every
// page a fault touches (fault-around), or a whole 2 MiB folio of a file
// the linker has just written: by the time a server is ready, its package
// initializers, spread over the whole binary, have left 20 MB or more of
// it resident, most of which the server never runs again
// (docs/benchmarks.md, "The executable's pages"). This process's
// mappings of them go, then the page cache's copies that no process maps,
// and the pages it runs come back on first use.
//
// Only mappings of the executable that cannot be written and hold no
// anonymous pages are advised: MADV_DONTNEED on a private page that was
// copied on write (the read-only data the dynamic loader relocates, say)
// would drop the copy and read the file's bytes again.
func UnmapExecutable() (int64, error) {
	// The executable by device and inode, which hold when its path has
	// gone or been replaced.
	fi, err := os.Stat("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("stat /proc/self/exe: no device and inode")
	}
	dev := fmt.Sprintf("%02x:%02x", (st.Dev>>8)&0xfff|(st.Dev>>32)&^0xfff, st.Dev&0xff|(st.Dev>>12)&^0xff)
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, m := range fileMappings(smaps, dev, st.Ino) {
		for _, advice := range []int{syscall.MADV_RANDOM, syscall.MADV_DONTNEED} {
			if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, uintptr(advice)); errno != 0 {
				return total, fmt.Errorf("madvise %#x-%#x: %w", m.start, m.end, errno)
			}
		}
		total += int64(m.end - m.start)
	}
	// The pages no process maps any more leave the page cache too. Left
	// there, they sit in the large folios the file was read or written
	// in, and a fault maps its whole folio, MADV_RANDOM or not: under
	// load the server held 6.8 MB of its 10.8 MB function table. Read
	// back from the file under MADV_RANDOM, a page comes alone. Pages
	// another process maps stay, and another server running this binary
	// reads from the file the pages it had not mapped.
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		return total, err
	}
	defer exe.Close()
	// A binary just built is still being written back, and the cache
	// keeps pages until they are on disk.
	if err := unix.Fdatasync(int(exe.Fd())); err != nil {
		return total, fmt.Errorf("fdatasync %s: %w", exe.Name(), err)
	}
	if err := unix.Fadvise(int(exe.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return total, fmt.Errorf("fadvise %s: %w", exe.Name(), err)
	}
	return total, nil
}

type mapping struct{ start, end uintptr }

// fileMappings returns the mappings of the file with device dev (major:minor
// in hexadecimal, as smaps writes it) and inode ino in smaps (the text of
// /proc/PID/smaps) that are not writable and hold no anonymous pages.
func fileMappings(smaps []byte, dev string, ino uint64) []mapping {
	var out []mapping
	open := false // the last mapping in out is the one being read
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		if bytes.HasSuffix(f[0], []byte(":")) {
			// A field of the mapping being read: "Anonymous: 4 kB".
			if open && string(f[0]) == "Anonymous:" && (len(f) < 2 || string(f[1]) != "0") {
				out, open = out[:len(out)-1], false
			}
			continue
		}
		// A mapping's header: range, permissions, offset, device, inode,
		// path.
		open = false
		if len(f) < 5 || string(f[3]) != dev || string(f[4]) != strconv.FormatUint(ino, 10) || len(f[1]) < 2 || f[1][0] != 'r' || f[1][1] != '-' {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out, open = append(out, mapping{uintptr(start), uintptr(end)}), true
	}
	return out
}
