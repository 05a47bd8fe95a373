package httpapi

import "testing"

// TestAppendCharge: charges are reported to two decimals, as the service
// reports them; a sum of weights must not show its binary rounding.
func TestAppendCharge(t *testing.T) {
	for _, tt := range []struct {
		charge float64
		want   string
	}{
		{1, "1"},
		{2.5, "2.5"},
		{1.02 + 1.02 + 1.02, "3.06"}, // 3.0600000000000005
		{3.0599999999999996, "3.06"},
		{10.294999, "10.29"},
		{5.7149, "5.71"},
		{0, "0"},
	} {
		if got := string(appendCharge(nil, tt.charge)); got != tt.want {
			t.Errorf("appendCharge(%v) = %q, want %q", tt.charge, got, tt.want)
		}
	}
}
