package transfer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
)

// AsOf says which instant an imported item's time to live counts from.
type AsOf int

const (
	// AsOfImport: the item's _ts becomes the instant of the import, as
	// for any write, so its ttl (or the container's default) counts from
	// then: an item lives its whole ttl again.
	AsOfImport AsOf = iota
	// AsOfExport: the item keeps the expiry instant it had where it was
	// exported: its ttl is shortened by the time since its _ts there, and
	// an item whose instant has passed is not imported.
	AsOfExport
)

// ImportOptions says where a dump goes and how fast.
type ImportOptions struct {
	Database string
	// Container, when set, imports only that container's items.
	Container string
	// Rate bounds the items written per second; 0 for no bound.
	Rate float64
	AsOf AsOf
	// Progress, when set, is called now and then with the counts so far.
	Progress func(ImportStats)
}

// ImportStats counts what Import did.
type ImportStats struct {
	Imported int64 // items created
	Present  int64 // items already there (a re-run skips them)
	Expired  int64 // items not imported, their expiry instant passed (AsOfExport)
}

// Import reads a dump (Export's JSON lines) from r and creates its
// database and containers (when missing) and items in o.Database, one
// line at a time.
// An item already present is left as it is, so an interrupted import can
// simply be run again.
func (c *Client) Import(ctx context.Context, r io.Reader, o ImportOptions) (ImportStats, error) {
	var st ImportStats
	br := bufio.NewReaderSize(r, 1<<20)
	var cur *target
	start := c.clock.Now()
	lastReport := start
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var ierr error
			cur, ierr = c.importLine(ctx, line, cur, o, &st)
			if ierr != nil {
				return st, fmt.Errorf("line %d: %w", lineNo, ierr)
			}
			if o.Rate > 0 {
				written := st.Imported + st.Present
				if wait := start.Add(time.Duration(float64(written) / o.Rate * float64(time.Second))).Sub(c.clock.Now()); wait > 0 {
					if err := sleep(ctx, wait); err != nil {
						return st, err
					}
				}
			}
			if o.Progress != nil && c.clock.Now().Sub(lastReport) >= time.Second {
				lastReport = c.clock.Now()
				o.Progress(st)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
	}
	if o.Progress != nil {
		o.Progress(st)
	}
	return st, nil
}

// target is the container the items being read go into.
type target struct {
	id         string
	skip       bool       // not the container asked for
	paths      [][]string // the partition key's paths, split into segments
	defaultTTL *float64   // nil: TTL off
}

// importLine handles one line: a container's header or an item.
func (c *Client) importLine(ctx context.Context, line []byte, cur *target, o ImportOptions, st *ImportStats) (*target, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return cur, fmt.Errorf("not a JSON object: %w", err)
	}
	if props, ok := v["$container"].(map[string]any); ok {
		return c.openTarget(ctx, props, o)
	}
	if cur == nil {
		return cur, errors.New(`an item before any {"$container": …} line`)
	}
	if cur.skip {
		return cur, nil
	}
	body := line
	if o.AsOf == AsOfExport {
		ttl, ok := remainingTTL(v, cur.defaultTTL, c.clock.Now())
		switch {
		case ok && ttl <= 0:
			st.Expired++
			return cur, nil
		case ok:
			v["ttl"] = ttl
			b, err := json.Marshal(v)
			if err != nil {
				return cur, err
			}
			body = b
		}
	}
	pk, err := json.Marshal(partitionKeyOf(v, cur.paths))
	if err != nil {
		return cur, err
	}
	resp, err := c.do(ctx, http.MethodPost, "dbs/"+o.Database+"/colls/"+cur.id+"/docs",
		map[string]string{"x-ms-documentdb-partitionkey": string(pk)}, json.RawMessage(bytes.TrimSpace(body)), http.StatusCreated, http.StatusConflict)
	if err != nil {
		return cur, fmt.Errorf("create item %v in %s: %w", v["id"], cur.id, err)
	}
	if resp.StatusCode != http.StatusConflict {
		resp.Body.Close()
		st.Imported++
		return cur, nil
	}
	// A conflict is an item of that id already there, or another item
	// holding the values a unique key of the container keeps for one:
	// the item is then not imported, which is an error.
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	// Asked by a query rather than read by its path, which an id may not
	// fit (one holding '/', '#', '?' or '%', or ending in a space).
	id, _ := v["id"].(string)
	got, err := c.do(ctx, http.MethodPost, "dbs/"+o.Database+"/colls/"+cur.id+"/docs",
		map[string]string{"x-ms-documentdb-partitionkey": string(pk), "x-ms-documentdb-isquery": "True", "Content-Type": "application/query+json"},
		map[string]any{"query": "SELECT VALUE COUNT(1) FROM c WHERE c.id = @id", "parameters": []map[string]any{{"name": "@id", "value": id}}},
		http.StatusOK)
	if err != nil {
		return cur, fmt.Errorf("look for item %v in %s after a conflict: %w", v["id"], cur.id, err)
	}
	var page struct{ Documents []int }
	err = json.NewDecoder(io.LimitReader(got.Body, 1<<16)).Decode(&page)
	got.Body.Close()
	if err != nil {
		return cur, fmt.Errorf("look for item %v in %s after a conflict: %w", v["id"], cur.id, err)
	}
	if len(page.Documents) != 1 || page.Documents[0] == 0 {
		return cur, fmt.Errorf("create item %v in %s: %w", v["id"], cur.id, errorOf(http.StatusConflict, msg))
	}
	st.Present++
	return cur, nil
}

// openTarget creates the container a header line describes, unless it
// exists, and returns it as the target of the lines that follow.
func (c *Client) openTarget(ctx context.Context, props map[string]any, o ImportOptions) (*target, error) {
	id, _ := props["id"].(string)
	if id == "" {
		return nil, errors.New(`a {"$container": …} line without an id`)
	}
	t := &target{id: id, skip: o.Container != "" && o.Container != id}
	if t.skip {
		return t, nil
	}
	if pk, ok := props["partitionKey"].(map[string]any); ok {
		paths, _ := pk["paths"].([]any)
		for _, p := range paths {
			s, _ := p.(string)
			t.paths = append(t.paths, splitPath(s))
		}
	}
	if n, ok := props["defaultTtl"].(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			t.defaultTTL = &f
		}
	}
	// The database is made with its first container, so that a dump
	// that holds none (empty, or not a dump) leaves nothing behind.
	if _, err := c.do(ctx, http.MethodPost, "dbs", nil, map[string]string{"id": o.Database}, http.StatusCreated, http.StatusConflict); err != nil {
		return nil, fmt.Errorf("create database %s: %w", o.Database, err)
	}
	if _, err := c.do(ctx, http.MethodPost, "dbs/"+o.Database+"/colls", nil, props, http.StatusCreated, http.StatusConflict); err != nil {
		return nil, fmt.Errorf("create container %s: %w", id, err)
	}
	return t, nil
}

// splitPath splits a partition key path (/a/b, /"a b"/c) into segments.
func splitPath(p string) []string {
	var segs []string
	for p != "" {
		p = strings.TrimPrefix(p, "/")
		if strings.HasPrefix(p, `"`) {
			if end := strings.Index(p[1:], `"`); end >= 0 {
				segs = append(segs, p[1:end+1])
				p = p[end+2:]
				continue
			}
		}
		i := strings.IndexByte(p, '/')
		if i < 0 {
			segs = append(segs, p)
			break
		}
		segs = append(segs, p[:i])
		p = p[i:]
	}
	return segs
}

// partitionKeyOf is the value of the x-ms-documentdb-partitionkey header
// for item v: its value at each path, {} where it has none (undefined).
func partitionKeyOf(v map[string]any, paths [][]string) []any {
	out := make([]any, 0, len(paths))
	for _, segs := range paths {
		var cur any = v
		found := true
		for _, s := range segs {
			m, ok := cur.(map[string]any)
			if !ok {
				found = false
				break
			}
			if cur, ok = m[s]; !ok {
				found = false
				break
			}
		}
		switch cur.(type) {
		case map[string]any, []any:
			found = false // an object or array is no partition key value
		}
		if found {
			out = append(out, cur)
		} else {
			out = append(out, map[string]any{})
		}
	}
	return out
}

// remainingTTL is the ttl that keeps v's expiry instant when it is written
// at now: its own ttl, or the container's default, less the time since its
// _ts (none for a _ts after now). ok is false when v does not expire.
func remainingTTL(v map[string]any, defaultTTL *float64, now time.Time) (float64, bool) {
	if defaultTTL == nil {
		return 0, false // TTL is off in the container: nothing expires
	}
	ttl := *defaultTTL
	if n, ok := v["ttl"].(json.Number); ok {
		f, err := n.Float64()
		if err != nil {
			return 0, false
		}
		ttl = f
	}
	if ttl <= 0 {
		return 0, false // -1: never
	}
	ts, ok := v["_ts"].(json.Number)
	if !ok {
		return 0, false
	}
	t, err := ts.Int64()
	if err != nil {
		return 0, false
	}
	// In seconds as floats: a _ts far from now would overflow a Duration.
	// An item written after now by the exporter's clock keeps its whole
	// ttl, never more.
	elapsed := max(float64(now.Unix())-float64(t), 0)
	return math.Ceil(ttl - elapsed), true
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
