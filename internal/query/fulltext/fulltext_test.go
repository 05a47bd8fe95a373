package fulltext

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"The Blue whales' stories, Foxes and BOXES!", []string{"the", "blue", "whale", "story", "fox", "and", "box"}},
		{"glass bus axis class", []string{"glass", "bus", "axis", "class"}},
		{"café-42 naïve", []string{"café", "42", "naïve"}},
		{"  ,.;  ", []string{}},
	} {
		if got := Words(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Words(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
