package engine

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/query/eval"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// PatchOp is one partial-update operation (docs/protocol.md §7.3).
type PatchOp struct {
	Op    string // add, set, replace, remove, incr, move
	Path  []string
	From  []string
	Value document.Value
	raw   string
}

const maxPatchOps = 10

// ParsePatch decodes a patch body: {"condition"?, "operations":[…]} or a bare
// array of operations.
func ParsePatch(body []byte) (ops []PatchOp, condition string, err error) {
	v, perr := document.Parse(body)
	if perr != nil {
		return nil, "", errorf(BadRequest, "The patch request payload is invalid: %v", perr)
	}
	list := v
	if v.Kind() == document.Object {
		list = v.Get("operations")
		if c := v.Get("condition"); c.IsDefined() && !c.IsNull() {
			if c.Kind() != document.String {
				return nil, "", errorf(BadRequest, "The patch condition must be a string.")
			}
			condition = c.Str()
		}
	}
	if list.Kind() != document.Array {
		return nil, "", errorf(BadRequest, "The patch request must contain an 'operations' array.")
	}
	if list.Len() == 0 {
		return nil, "", errorf(BadRequest, "The patch request must contain at least one operation.")
	}
	if list.Len() > maxPatchOps {
		return nil, "", errorf(BadRequest, "The number of patch operations exceeds the limit of %d.", maxPatchOps)
	}
	for i, o := range list.Array() {
		op := PatchOp{Op: strings.ToLower(o.Get("op").Str()), Value: o.Get("value")}
		switch op.Op {
		case "add", "set", "replace", "remove", "incr", "increment", "move":
		default:
			return nil, "", errorf(BadRequest, "For Operation(%d): the operation type '%s' is invalid.", i, o.Get("op").Str())
		}
		if op.Op == "increment" {
			op.Op = "incr"
		}
		p, derr := parsePointer(o.Get("path"), i)
		if derr != nil {
			return nil, "", derr
		}
		op.Path, op.raw = p, o.Get("path").Str()
		if op.Op == "move" {
			if op.From, derr = parsePointer(o.Get("from"), i); derr != nil {
				return nil, "", derr
			}
			if strings.HasPrefix(op.raw+"/", o.Get("from").Str()+"/") {
				return nil, "", errorf(BadRequest, "For Operation(%d): the path cannot be inside 'from'.", i)
			}
		}
		if !op.Value.IsDefined() && op.Op != "remove" && op.Op != "move" {
			op.Value = document.NullValue()
		}
		if op.Op == "incr" && op.Value.Kind() != document.Number {
			return nil, "", errorf(BadRequest, "For Operation(%d): increment value must be a number.", i)
		}
		// A move patches its source too: moving /id away would leave the
		// item without the id it is stored under.
		for _, p := range [][]string{op.Path, op.From} {
			if len(p) == 0 {
				continue
			}
			switch p[0] {
			case "id", "_rid", "_self", "_etag", "_ts", "_attachments", "_lsn":
				return nil, "", errorf(BadRequest, "For Operation(%d): the system property '%s' cannot be patched.", i, p[0])
			}
		}
		ops = append(ops, op)
	}
	return ops, condition, nil
}

func parsePointer(v document.Value, i int) ([]string, *Error) {
	if v.Kind() != document.String || !strings.HasPrefix(v.Str(), "/") || v.Str() == "/" || badEscape(v.Str()) {
		return nil, errorf(BadRequest, "For Operation(%d): the path %s is invalid; it must be a JSON pointer such as '/a/b'.", i, v.String())
	}
	parts := strings.Split(v.Str()[1:], "/")
	for j, p := range parts {
		parts[j] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// badEscape reports whether a JSON pointer holds a '~' that is not the
// start of "~0" or "~1" (RFC 6901).
func badEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '~' && (i+1 == len(s) || s[i+1] != '0' && s[i+1] != '1') {
			return true
		}
	}
	return false
}

// arrayIndex reads a pointer segment as an array index: digits without a
// leading zero (RFC 6901), at most MaxInt32.
func arrayIndex(seg string) (int, bool) {
	if seg == "" || len(seg) > 1 && seg[0] == '0' || strings.TrimLeft(seg, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(seg)
	return n, err == nil && n <= math.MaxInt32
}

// applyPatch applies ops in order to doc.
func applyPatch(doc document.Value, ops []PatchOp) (document.Value, *Error) {
	for i, op := range ops {
		var derr *Error
		switch op.Op {
		case "move":
			var moved document.Value
			moved, derr = getPath(doc, op.From, i)
			if derr == nil {
				doc, derr = update(doc, op.From, i, func(document.Value, bool) (document.Value, *Error) { return document.Undef, nil }, "remove")
			}
			if derr == nil {
				// Then added (RFC 6902's move): at an array index it is
				// inserted, not written over the element there.
				doc, derr = update(doc, op.Path, i, func(document.Value, bool) (document.Value, *Error) { return moved, nil }, "add")
			}
		case "incr":
			doc, derr = update(doc, op.Path, i, func(old document.Value, exists bool) (document.Value, *Error) {
				if !exists {
					return op.Value, nil
				}
				if old.Kind() != document.Number {
					return document.Undef, errorf(BadRequest, "For Operation(%d): Node(%s) is not a number and cannot be incremented.", i, op.raw)
				}
				sum, ok := addNumbers(old, op.Value)
				if !ok {
					return document.Undef, errorf(BadRequest, "For Operation(%d): incrementing Node(%s) by %s overflows the range of a number.", i, op.raw, op.Value.JSON())
				}
				return sum, nil
			}, "set")
		default:
			doc, derr = update(doc, op.Path, i, func(old document.Value, exists bool) (document.Value, *Error) {
				if (op.Op == "replace" || op.Op == "remove") && !exists {
					verb := "replaced"
					if op.Op == "remove" {
						verb = "removed"
					}
					return document.Undef, errorf(BadRequest, "For Operation(%d): Node(%s) to be %s is absent.", i, op.raw, verb)
				}
				if op.Op == "remove" {
					return document.Undef, nil
				}
				return op.Value, nil
			}, op.Op)
		}
		if derr != nil {
			return document.Undef, derr
		}
	}
	return doc, nil
}

// addNumbers adds two JSON numbers for incr. The SDKs send an integer or a
// double, and the service documents no overflow rule: two integers give an
// integer while the sum fits in 64 bits and widen to a double past that
// (never wrapping around), anything else adds as doubles. A sum beyond the
// double range has no JSON form (it would be stored as null), so it
// reports false and the patch is refused.
func addNumbers(a, b document.Value) (document.Value, bool) {
	if a.IsInt() && b.IsInt() {
		s := a.Int() + b.Int()
		if (s > a.Int()) == (b.Int() > 0) {
			return document.Int(s), true
		}
	}
	f := a.Float() + b.Float()
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return document.Undef, false
	}
	return document.Float(f), true
}

func getPath(doc document.Value, path []string, i int) (document.Value, *Error) {
	cur := doc
	for _, seg := range path {
		switch cur.Kind() {
		case document.Object:
			cur = cur.Get(seg)
		case document.Array:
			n, ok := arrayIndex(seg)
			if !ok {
				return document.Undef, errorf(BadRequest, "For Operation(%d): invalid array index '%s'.", i, seg)
			}
			cur = cur.Index(n)
		default:
			cur = document.Undef
		}
		if !cur.IsDefined() {
			return document.Undef, errorf(BadRequest, "For Operation(%d): Node(/%s) is absent.", i, strings.Join(path, "/"))
		}
	}
	return cur, nil
}

// update rebuilds doc with the value at path replaced by fn's result (Undef
// removes it). op decides array semantics: add inserts, set/replace
// overwrite, remove deletes.
func update(doc document.Value, path []string, i int, fn func(old document.Value, exists bool) (document.Value, *Error), op string) (document.Value, *Error) {
	if len(path) == 0 {
		return document.Undef, errorf(BadRequest, "For Operation(%d): the root cannot be patched.", i)
	}
	seg := path[0]
	last := len(path) == 1
	switch doc.Kind() {
	case document.Object:
		child := doc.Get(seg)
		if last {
			nv, derr := fn(child, child.IsDefined())
			if derr != nil {
				return document.Undef, derr
			}
			return doc.With(seg, nv), nil
		}
		if !child.IsDefined() {
			return document.Undef, errorf(BadRequest, "For Operation(%d): the parent of Node(/%s) is absent.", i, strings.Join(path, "/"))
		}
		nv, derr := update(child, path[1:], i, fn, op)
		if derr != nil {
			return document.Undef, derr
		}
		return doc.With(seg, nv), nil
	case document.Array:
		elems := doc.Array()
		var idx int
		if seg == "-" {
			idx = len(elems)
		} else {
			n, ok := arrayIndex(seg)
			if !ok {
				return document.Undef, errorf(BadRequest, "For Operation(%d): invalid array index '%s'.", i, seg)
			}
			idx = n
		}
		if last {
			exists := idx < len(elems)
			if idx > len(elems) || (idx == len(elems) && op != "add" && op != "set") {
				return document.Undef, errorf(BadRequest, "For Operation(%d): array index %d is out of bounds.", i, idx)
			}
			var old document.Value
			if exists {
				old = elems[idx]
			}
			nv, derr := fn(old, exists)
			if derr != nil {
				return document.Undef, derr
			}
			out := make([]document.Value, 0, len(elems)+1)
			out = append(out, elems[:idx]...)
			switch {
			case !nv.IsDefined(): // remove
				if exists {
					out = append(out, elems[idx+1:]...)
				}
			case op == "add":
				out = append(out, nv)
				out = append(out, elems[idx:]...)
			default:
				out = append(out, nv)
				if exists {
					out = append(out, elems[idx+1:]...)
				}
			}
			return document.Arr(out), nil
		}
		if idx >= len(elems) {
			return document.Undef, errorf(BadRequest, "For Operation(%d): array index %d is out of bounds.", i, idx)
		}
		nv, derr := update(elems[idx], path[1:], i, fn, op)
		if derr != nil {
			return document.Undef, derr
		}
		out := append([]document.Value(nil), elems...)
		out[idx] = nv
		return document.Arr(out), nil
	}
	return document.Undef, errorf(BadRequest, "For Operation(%d): the parent of Node(/%s) is not an object or array.", i, strings.Join(path, "/"))
}

// PatchItemParams is a patch.
type PatchItemParams struct {
	ItemRef
	ID        string
	Ops       []PatchOp
	Condition string
	IfMatch   string

	// pre holds the conditions judged before the transaction
	// (condition.go); budget bounds the ones judged inside it.
	pre    verdicts
	budget *eval.Budget
}

// PatchItem applies a partial update. It sets _ts (restarting the TTL
// countdown) and validates a patched ttl like any write.
func (e *Engine) PatchItem(ctx context.Context, p PatchItemParams) (*ItemResult, error) {
	judge := e.judgingIn
	if p.Condition != "" {
		// The condition is judged before the transaction, at the same now.
		judge = e.judging
	}
	now, done, err := judge(ctx, p.DB, p.Coll)
	if err != nil {
		return nil, err
	}
	defer done()
	if p.Condition != "" {
		p.budget = e.budget(ctx)
		p.pre = e.prejudge(ctx, p.DB, p.Coll, []condTarget{{p.ItemRef, p.ID, p.Condition}}, now, p.budget)
	}
	return e.writeOneAt(ctx, p.ItemRef, p.ID, now, false, func(tx storage.Txn, c *containerRecord, now time.Time) (*ItemResult, error) {
		return e.patchItemTx(tx, c, p, now)
	})
}

// patchItemTx applies a patch inside a transaction; batches call it once
// per patch operation.
func (e *Engine) patchItemTx(tx storage.Txn, c *containerRecord, p PatchItemParams, now time.Time) (*ItemResult, error) {
	live, err := e.liveForWrite(tx, c, p.ItemRef, p.ID, p.IfMatch, now)
	if err != nil {
		return nil, err
	}
	doc, err := document.Parse(live.rec.json)
	if err != nil {
		return nil, err
	}
	if p.Condition != "" {
		ok, err := judgeCondition(p.pre, p.Condition, live.rec.json, doc, now, p.budget, c)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, preconditionFailed()
		}
	}
	for _, op := range p.Ops {
		for i, path := range c.pk.paths {
			if pathsOverlap(op.Path, path) || (op.Op == "move" && pathsOverlap(op.From, path)) {
				return nil, errorf(BadRequest, "The partition key path '%s' cannot be patched.", c.pk.raw[i])
			}
		}
	}
	patched, derr := applyPatch(doc.Without(itemSystemProps...), p.Ops)
	if derr != nil {
		return nil, derr
	}
	w := WriteItemParams{ItemRef: ItemRef{DB: p.DB, Coll: p.Coll}, Mode: ModeReplace, ID: p.ID}
	return e.writeItemTx(tx, c, w, p.ID, patched, now)
}

func pathsOverlap(a, b []string) bool {
	n := len(a)
	if len(b) < n {
		n = len(b)
	}
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
