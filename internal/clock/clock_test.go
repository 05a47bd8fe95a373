package clock

import (
	"testing"
	"time"
)

func TestManual(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := NewManual(start)
	fired := c.After(2 * time.Second)
	now := c.After(0)
	select {
	case <-now:
	default:
		t.Fatal("After(0) must fire at once")
	}
	c.Advance(time.Second)
	select {
	case <-fired:
		t.Fatal("fired a second early")
	default:
	}
	c.Set(start) // never backwards
	if !c.Now().Equal(start.Add(time.Second)) {
		t.Fatalf("Set moved the clock back to %v", c.Now())
	}
	c.Advance(time.Second)
	select {
	case at := <-fired:
		if !at.Equal(start.Add(2 * time.Second)) {
			t.Fatalf("fired at %v", at)
		}
	default:
		t.Fatal("did not fire when due")
	}
}

func TestReal(t *testing.T) {
	var c Clock = Real{}
	if d := time.Since(c.Now()); d < 0 || d > time.Second {
		t.Fatalf("real clock is off by %v", d)
	}
	select {
	case <-c.After(time.Millisecond):
	case <-time.After(5 * time.Second):
		t.Fatal("Real.After never fired")
	}
}
