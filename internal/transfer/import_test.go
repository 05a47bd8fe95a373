package transfer

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestPartitionKeyOf(t *testing.T) {
	for _, tc := range []struct {
		item  string
		paths []string
		want  string
	}{
		{`{"pk":"a"}`, []string{"/pk"}, `["a"]`},
		{`{"pk":5}`, []string{"/pk"}, `[5]`},
		{`{"pk":null}`, []string{"/pk"}, `[null]`},
		{`{}`, []string{"/pk"}, `[{}]`},
		{`{"pk":{"x":1}}`, []string{"/pk"}, `[{}]`},
		{`{"a":{"b":true}}`, []string{"/a/b"}, `[true]`},
		{`{"a b":{"c":"x"}}`, []string{`/"a b"/c`}, `["x"]`},
		{`{"t":"x","u":"y"}`, []string{"/t", "/u"}, `["x","y"]`},
		{`{"pk":12345678901234567890}`, []string{"/pk"}, `[12345678901234567890]`},
	} {
		dec := json.NewDecoder(bytes.NewReader([]byte(tc.item)))
		dec.UseNumber()
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var paths [][]string
		for _, p := range tc.paths {
			paths = append(paths, splitPath(p))
		}
		got, _ := json.Marshal(partitionKeyOf(v, paths))
		if string(got) != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.item, tc.paths, got, tc.want)
		}
	}
}

func TestRemainingTTL(t *testing.T) {
	now := time.Unix(1_700_000_100, 0)
	def := func(f float64) *float64 { return &f }
	for _, tc := range []struct {
		item   string
		def    *float64
		want   float64
		expire bool
	}{
		{`{"_ts":1700000000}`, nil, 0, false},                 // TTL off
		{`{"_ts":1700000000}`, def(-1), 0, false},             // on, no default
		{`{"_ts":1700000000}`, def(300), 200, true},           // default, 100 s gone
		{`{"_ts":1700000000,"ttl":150}`, def(-1), 50, true},   // own ttl
		{`{"_ts":1700000000,"ttl":60}`, def(300), -40, true},  // passed
		{`{"_ts":1700000000,"ttl":-1}`, def(300), 0, false},   // never
		{`{"_ts":1700000000,"ttl":100.5}`, def(300), 1, true}, // rounded up
		{`{"_ts":1700000130,"ttl":5}`, def(300), 5, true},     // written after now: its whole ttl
		{`{"_ts":99999999999,"ttl":5}`, def(10), 5, true},     // far after: no overflow
	} {
		dec := json.NewDecoder(bytes.NewReader([]byte(tc.item)))
		dec.UseNumber()
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		got, ok := remainingTTL(v, tc.def, now)
		if ok != tc.expire || got != tc.want {
			t.Errorf("%s: %v %v, want %v %v", tc.item, got, ok, tc.want, tc.expire)
		}
	}
}
