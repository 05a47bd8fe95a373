package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// TestB4_ErasureByTheDeadlineDespiteKills is ttl.md B4 against the real
// command on the real clock: items whose bodies and indexed values hold
// random markers expire after a second, with live items beside them; the
// server is killed with SIGKILL at random moments while it purges and
// erases, and restarted on the same directory each time. By the erasure
// deadline after the last expiry, no file under the data directory holds
// an expired marker, in any form Pebble could read back, and every live
// marker is still there and reads back.
func TestB4_ErasureByTheDeadlineDespiteKills(t *testing.T) {
	const deadline = 10 * time.Second
	bin := buildMayfly(t)
	dir := t.TempDir()
	args := []string{"--erase-deadline", deadline.String()}
	p := startProcess(t, bin, dir, args...)
	e := connect(t, p)
	for _, r := range []struct{ path, body string }{
		{"/dbs", `{"id":"db"}`},
		{"/dbs/db/colls", `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":-1}`},
	} {
		if res := e.do("POST", r.path, []byte(r.body), nil); res.status != 201 {
			t.Fatalf("POST %s: %d %s", r.path, res.status, res.body)
		}
	}
	mark := func() string {
		b := make([]byte, 10)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		return "mk" + hex.EncodeToString(b)
	}
	var expired, live []string
	for i := 0; i < 300; i++ {
		body, tag := mark(), mark()
		ttl := `,"ttl":1`
		if i%10 == 0 {
			ttl = ""
			live = append(live, body, tag)
		} else {
			expired = append(expired, body, tag)
		}
		doc := fmt.Sprintf(`{"id":"i%d","pk":"p%d","text":"holds %s","tag":%q%s}`, i, i%5, body, tag, ttl)
		res := e.do("POST", "/dbs/db/colls/c/docs", []byte(doc), map[string]string{"x-ms-documentdb-partitionkey": fmt.Sprintf(`["p%d"]`, i%5)})
		if res.status != 201 {
			t.Fatalf("create: %d %s", res.status, res.body)
		}
	}
	// Every item expired by here (a _ts rounded down, a ttl of 1 s).
	lastExpiry := time.Now().Add(time.Second)

	// Kill at random moments from the expiries until past the moment the
	// erasure is due (half the deadline), restarting each time.
	for round := 0; round < 4; round++ {
		time.Sleep(time.Duration(mrand.Int64N(int64(2 * time.Second))))
		p.kill(t)
		p = startProcess(t, bin, dir, args...)
	}
	e = connect(t, p)
	if wait := time.Until(lastExpiry.Add(deadline)); wait > 0 {
		time.Sleep(wait)
	}
	needles := func(ms []string) [][]byte {
		out := make([][]byte, len(ms))
		for i, m := range ms {
			out[i] = []byte(m)
		}
		return out
	}
	found, err := pebblestore.SearchFiles(dir, needles(expired))
	if err != nil {
		t.Fatal(err)
	}
	for m, files := range found {
		t.Errorf("expired marker %s is in %v past the erasure deadline", m, files)
	}
	if found, err = pebblestore.SearchFiles(dir, needles(live)); err != nil {
		t.Fatal(err)
	} else if len(found) != len(live) {
		t.Errorf("%d of %d live markers are in the files", len(found), len(live))
	}
	for i := 0; i < 300; i += 10 {
		res := e.do("GET", fmt.Sprintf("/dbs/db/colls/c/docs/i%d", i), nil, map[string]string{"x-ms-documentdb-partitionkey": fmt.Sprintf(`["p%d"]`, i%5)})
		if res.status != 200 {
			t.Errorf("live item i%d: %d", i, res.status)
		}
	}
	m := e.metrics(t)
	if m["mayfly_ttl_erasure_supported"] != 1 {
		t.Errorf("mayfly_ttl_erasure_supported = %v, want 1", m["mayfly_ttl_erasure_supported"])
	}
}

// TestErasureSettingSurvivesGoSDKReplace: the Go SDK's container
// properties know only the service's fields, so a read-modify-replace
// through it sends no mayflyErasure; the setting stays, and a raw
// replace with null removes it. A bad setting is a 400.
func TestErasureSettingSurvivesGoSDKReplace(t *testing.T) {
	e := start(t)
	db := e.database("db")
	if res := e.do("POST", "/dbs/db/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"mayflyErasure":{"deadlineSeconds":600,"onDelete":true}}`), nil); res.status != 201 {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	c, err := db.NewContainer("c")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	read, err := c.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	props := *read.ContainerProperties
	ttl := int32(60)
	props.DefaultTimeToLive = &ttl
	if _, err := c.Replace(ctx, props, nil); err != nil {
		t.Fatal(err)
	}
	setting := func() string {
		t.Helper()
		res := e.do("GET", "/dbs/db/colls/c", nil, nil)
		var body struct {
			Erasure    json.RawMessage `json:"mayflyErasure"`
			DefaultTTL int             `json:"defaultTtl"`
		}
		if err := json.Unmarshal(res.body, &body); err != nil {
			t.Fatal(err)
		}
		if body.DefaultTTL != 60 {
			t.Fatalf("defaultTtl %d after the replace, want 60", body.DefaultTTL)
		}
		return string(body.Erasure)
	}
	if got := setting(); got != `{"deadlineSeconds":600,"onDelete":true}` {
		t.Errorf("mayflyErasure after a Go SDK replace: %s", got)
	}
	if res := e.do("PUT", "/dbs/db/colls/c", []byte(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":60,"mayflyErasure":null}`), nil); res.status != 200 {
		t.Fatalf("replace with null: %d %s", res.status, res.body)
	}
	if got := setting(); got != "" && got != "null" {
		t.Errorf("mayflyErasure after a replace with null: %s", got)
	}
	for _, bad := range []string{`{"deadlineSeconds":5}`, `{"deadlineSeconds":"600"}`, `{"onDelete":1}`, `{"deadline":600}`, `600`} {
		res := e.do("POST", "/dbs/db/colls", []byte(`{"id":"bad","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"mayflyErasure":`+bad+`}`), nil)
		if res.status != 400 || !strings.Contains(string(res.body), "mayflyErasure") {
			t.Errorf("mayflyErasure %s: %d %s, want 400 naming the property", bad, res.status, res.body)
		}
	}
}
