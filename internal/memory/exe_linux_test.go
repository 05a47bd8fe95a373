package memory

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestFileMappings(t *testing.T) {
	smaps := `00400000-00402000 r--p 00000000 fd:00 42 /bin/srv
Size:                  8 kB
Anonymous:             0 kB
00402000-0119b000 r-xp 00002000 fd:00 42 /bin/srv
Size:              13924 kB
Rss:               10000 kB
Anonymous:             0 kB
0119b000-01fcc000 r--p 00d9b000 fd:00 42 /bin/srv
Anonymous:             0 kB
01fcc000-01fcd000 r--p 01bcc000 fd:00 42 /bin/srv
Anonymous:             4 kB
01fcd000-021f0000 rw-p 01bcd000 fd:00 42 /bin/srv
Anonymous:           140 kB
021f0000-02300000 rw-p 00000000 00:00 0
Anonymous:           900 kB
7f0000000000-7f0000001000 r-xp 00000000 fd:00 43 /lib/libc.so.6
Anonymous:             0 kB
7f0000002000-7f0000003000 r--p 00000000 fd:00 44 /bin/srv (deleted)
Anonymous:             0 kB
7f0000004000-7f0000005000 r--p 00000000 fd:01 42 /other
Anonymous:             0 kB
7f0000006000-7f0000007000 r--p 00004000 fd:00 42 /bin/srv (deleted)
Anonymous:             0 kB
`
	got := fileMappings([]byte(smaps), "fd:00", 42)
	want := []mapping{{0x400000, 0x402000}, {0x402000, 0x119b000}, {0x119b000, 0x1fcc000}, {0x7f0000006000, 0x7f0000007000}}
	if len(got) != len(want) {
		t.Fatalf("got %x, want %x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("mapping %d: got %x, want %x", i, got[i], want[i])
		}
	}
}

// TestUnmapExecutable: after the call, this test binary holds fewer of its
// own file's pages, and it still runs (every page it runs is mapped back).
func TestUnmapExecutable(t *testing.T) {
	before := rssFileKB(t)
	n, err := UnmapExecutable()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no mapping of the executable was advised")
	}
	after := rssFileKB(t)
	if after >= before {
		t.Fatalf("file-backed resident memory %d kB before, %d kB after", before, after)
	}
	t.Logf("advised %d MB; file-backed resident memory %d kB before, %d kB after", n>>20, before, after)
	// The pages left the page cache as well, all but those in a folio
	// some page of which was mapped again since (the runtime's own code
	// runs all the while): about half of this small binary's pages.
	if cached, size := cachedPages(t); cached*10 > size*9 {
		t.Fatalf("%d of the executable's %d pages still cached", cached, size)
	} else {
		t.Logf("%d of the executable's %d pages cached", cached, size)
	}
	// Code not run since is mapped back when it runs.
	if s := strconv.Itoa(len(strings.Fields("a b c"))); s != "3" {
		t.Fatal(s)
	}
}

// cachedPages counts the executable's pages in the page cache, and its
// size in pages.
func cachedPages(t *testing.T) (cached, size int) {
	t.Helper()
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	for _, v := range vec {
		cached += int(v & 1)
	}
	return cached, len(vec)
}

func rssFileKB(t *testing.T) int {
	t.Helper()
	n, err := procKB("/proc/self/status", "RssFile:")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// procKB reads the field (its name with the colon) of a /proc file that
// gives sizes in kB, one field a line: status, smaps_rollup.
func procKB(file, field string) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no %s in %s", field, file)
}
