package memory

import "strings"

// hugePageTunable is glibc's tunable (2.35 and later) that has malloc
// advise transparent huge pages (madvise MADV_HUGEPAGE) for the mappings it
// makes for large allocations, and align its main heap's growth to them.
const hugePageTunable = "glibc.malloc.hugetlb"

// hugePageEnv returns environ with glibc's allocator told to advise huge
// pages, and whether it changed anything. It changes nothing when the
// tunable is set already, to any value (that is how a user turns it off:
// GLIBC_TUNABLES=glibc.malloc.hugetlb=0), or when thpEnabled (the text of
// /sys/kernel/mm/transparent_hugepage/enabled) says the kernel gives none
// or gives them to every mapping unasked. Other tunables are kept.
func hugePageEnv(environ []string, thpEnabled string) ([]string, bool) {
	if !strings.Contains(thpEnabled, "[madvise]") {
		return environ, false
	}
	out := make([]string, 0, len(environ)+1)
	set := false
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, "GLIBC_TUNABLES=")
		if !ok {
			out = append(out, kv)
			continue
		}
		for t := range strings.SplitSeq(v, ":") {
			if name, _, _ := strings.Cut(t, "="); name == hugePageTunable {
				return environ, false
			}
		}
		if v != "" {
			v += ":"
		}
		out = append(out, "GLIBC_TUNABLES="+v+hugePageTunable+"=1")
		set = true
	}
	if !set {
		out = append(out, "GLIBC_TUNABLES="+hugePageTunable+"=1")
	}
	return out, true
}
