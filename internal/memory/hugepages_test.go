package memory

import (
	"slices"
	"testing"
)

func TestHugePageEnv(t *testing.T) {
	const madvise = "always [madvise] never\n"
	tests := []struct {
		name    string
		environ []string
		thp     string
		want    []string
		changed bool
	}{
		{"none set", []string{"A=1"}, madvise, []string{"A=1", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}, true},
		{"others kept", []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2", "B=2"}, madvise,
			[]string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1", "B=2"}, true},
		{"empty", []string{"GLIBC_TUNABLES="}, madvise, []string{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}, true},
		{"turned off", []string{"GLIBC_TUNABLES=glibc.malloc.hugetlb=0"}, madvise, []string{"GLIBC_TUNABLES=glibc.malloc.hugetlb=0"}, false},
		{"set among others", []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2"}, madvise,
			[]string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.hugetlb=2"}, false},
		{"a longer name", []string{"GLIBC_TUNABLES=glibc.malloc.hugetlbx=1"}, madvise,
			[]string{"GLIBC_TUNABLES=glibc.malloc.hugetlbx=1:glibc.malloc.hugetlb=1"}, true},
		{"kernel gives none", []string{"A=1"}, "always madvise [never]\n", []string{"A=1"}, false},
		{"kernel gives them unasked", []string{"A=1"}, "[always] madvise never\n", []string{"A=1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := hugePageEnv(tt.environ, tt.thp)
			if changed != tt.changed || !slices.Equal(got, tt.want) {
				t.Errorf("got %q, %v; want %q, %v", got, changed, tt.want, tt.changed)
			}
		})
	}
}
