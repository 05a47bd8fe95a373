//go:build linux && cgo

package memory

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestExecWithHugePages runs this test binary as a child that calls
// ExecWithHugePages. The child must come back as the same process with the
// tunable in its environment, and its C allocator must then back a large
// allocation with huge pages; so must a child whose file was replaced in
// the meantime, rather than run the replacement. With the tunable already
// set to 0, it must not exec, and the allocation gets none.
func TestExecWithHugePages(t *testing.T) {
	if os.Getenv("MAYFLY_TEST_HUGE_PAGES_CHILD") != "" {
		hugePagesChild()
		return
	}
	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !strings.Contains(string(thp), "[madvise]") {
		t.Skipf("transparent huge pages are not given on request here (%q)", thp)
	}
	t.Run("exec", func(t *testing.T) {
		pids, tunables, huge := runChild(t, os.Args[0], "GLIBC_TUNABLES=glibc.malloc.arena_max=4")
		if len(pids) != 2 || pids[1] != pids[0] {
			t.Fatalf("pids and names %v: want the same process, by the same name, before and after the exec", pids)
		}
		if tunables != "glibc.malloc.arena_max=4:glibc.malloc.hugetlb=1" {
			t.Fatalf("GLIBC_TUNABLES %q after the exec", tunables)
		}
		if huge == 0 {
			t.Fatal("a touched 32 MiB allocation gained no huge pages")
		}
	})
	// A program whose file was replaced after it started runs itself
	// again, not the replacement.
	t.Run("replaced", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "replaced.test")
		self, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, self, 0o755); err != nil {
			t.Fatal(err)
		}
		pids, tunables, huge := runChild(t, path, "MAYFLY_TEST_HUGE_PAGES_REPLACE=1")
		if len(pids) != 2 || !strings.HasPrefix(pids[1], strings.Fields(pids[0])[0]+" ") {
			t.Fatalf("pids and names %v: want the same process twice", pids)
		}
		if tunables != "glibc.malloc.hugetlb=1" || huge == 0 {
			t.Fatalf("GLIBC_TUNABLES %q, %d kB of huge pages after the exec", tunables, huge)
		}
	})
	t.Run("off", func(t *testing.T) {
		pids, tunables, huge := runChild(t, os.Args[0], "GLIBC_TUNABLES=glibc.malloc.hugetlb=0")
		if len(pids) != 1 || tunables != "glibc.malloc.hugetlb=0" {
			t.Fatalf("pids %v, GLIBC_TUNABLES %q: want no exec and the setting kept", pids, tunables)
		}
		if huge != 0 {
			t.Fatalf("%d kB of huge pages with the tunable off", huge)
		}
	})
}

// runChild runs the test binary at path as a child of TestExecWithHugePages
// and returns what it printed: its pid and name before and after any exec,
// its GLIBC_TUNABLES and the huge pages its allocation gained.
func runChild(t *testing.T, path string, env ...string) (pids []string, tunables string, hugeKB int) {
	t.Helper()
	cmd := exec.Command(path, "-test.run", "^TestExecWithHugePages$")
	cmd.Env = append(os.Environ(), append([]string{"MAYFLY_TEST_HUGE_PAGES_CHILD=1"}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for line := range bytes.Lines(out) {
		f := strings.Fields(string(line))
		switch {
		case len(f) == 3 && f[0] == "pid":
			pids = append(pids, f[1]+" "+f[2])
		case len(f) >= 2 && f[0] == "huge":
			hugeKB, _ = strconv.Atoi(f[1])
			if len(f) == 3 {
				tunables = f[2]
			}
		}
	}
	if len(pids) == 0 || pids[0] != fmt.Sprintf("%d %s", cmd.Process.Pid, comm(path)) {
		t.Fatalf("child pids %v, started %d\n%s", pids, cmd.Process.Pid, out)
	}
	return pids, tunables, hugeKB
}

// hugePagesChild prints its pid, execs (or not), and then reports the huge
// pages a touched 32 MiB C allocation gained.
func hugePagesChild() {
	name, _ := os.ReadFile("/proc/self/comm")
	fmt.Printf("pid %d %s\n", os.Getpid(), bytes.TrimSpace(name))
	if os.Getenv("MAYFLY_TEST_HUGE_PAGES_REPLACE") != "" && !strings.Contains(os.Getenv("GLIBC_TUNABLES"), hugePageTunable) {
		// Another program now has this one's name; it prints nothing.
		other := os.Args[0] + ".new"
		if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
			fmt.Println("replace:", err)
			os.Exit(2)
		}
		if err := os.Rename(other, os.Args[0]); err != nil {
			fmt.Println("replace:", err)
			os.Exit(2)
		}
	}
	if err := ExecWithHugePages(); err != nil {
		fmt.Println("exec:", err)
		os.Exit(2)
	}
	before := anonHugeKB()
	free := cAllocTouched(32 << 20)
	defer free()
	fmt.Printf("huge %d %s\n", anonHugeKB()-before, os.Getenv("GLIBC_TUNABLES"))
}

// anonHugeKB is this process's anonymous memory on huge pages, 0 if it
// cannot be read (the test then finds none where it wants some).
func anonHugeKB() int {
	n, _ := procKB("/proc/self/smaps_rollup", "AnonHugePages:")
	return n
}

// comm is the name the kernel gives a process started from path: its base
// name, cut to 15 bytes.
func comm(path string) string {
	name := filepath.Base(path)
	if len(name) > 15 {
		name = name[:15]
	}
	return name
}
