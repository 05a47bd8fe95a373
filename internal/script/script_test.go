package script

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"
)

// memColl is a Collection over a map, for the script's side of the API.
type memColl struct{ docs map[string][]byte }

func (m *memColl) SelfLink() string { return "dbs/AA==/colls/AAAA=/" }
func (m *memColl) AltLink() string  { return "dbs/db/colls/c" }

func (m *memColl) Create(doc []byte, upsert bool) ([]byte, error) {
	var v map[string]any
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, err
	}
	id, _ := v["id"].(string)
	if _, ok := m.docs[id]; ok && !upsert {
		return nil, &Error{Status: 409, Message: "Entity with the specified id already exists in the system."}
	}
	m.docs[id] = doc
	return doc, nil
}

func idOf(link string) string { return link[strings.LastIndex(link, "/")+1:] }

func (m *memColl) Replace(link string, doc []byte, _ string) ([]byte, error) {
	if _, ok := m.docs[idOf(link)]; !ok {
		return nil, &Error{Status: 404, Message: "not found"}
	}
	m.docs[idOf(link)] = doc
	return doc, nil
}

func (m *memColl) Read(link string) ([]byte, error) {
	d, ok := m.docs[idOf(link)]
	if !ok {
		return nil, &Error{Status: 404, Message: "not found"}
	}
	return d, nil
}

func (m *memColl) Delete(link string, _ string) error {
	if _, ok := m.docs[idOf(link)]; !ok {
		return &Error{Status: 404, Message: "not found"}
	}
	delete(m.docs, idOf(link))
	return nil
}

func (m *memColl) Query(_ string, _ map[string]any, pageSize int, cont string) ([][]byte, string, error) {
	var ids []string
	for id := range m.docs {
		if id > cont {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	next := ""
	if len(ids) > pageSize {
		ids, next = ids[:pageSize], ids[pageSize-1]
	}
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = m.docs[id]
	}
	return out, next, nil
}

func runProc(t *testing.T, src, params string, lim Limits) (*Result, *memColl, error) {
	t.Helper()
	m := &memColl{docs: map[string][]byte{}}
	res, err := RunProcedure(context.Background(), src, []byte(params), m, lim)
	return res, m, err
}

func TestProcedures(t *testing.T) {
	for _, tc := range []struct {
		name, src, params string
		body              string // the response body, or the error's message
		failed            bool
	}{
		{"set body", `function () { getContext().getResponse().setBody({a: 1}) }`, ``, `{"a":1}`, false},
		{"parameters", `function (x, y) { getContext().getResponse().setBody(x + y) }`, `[2, 3]`, `5`, false},
		{"create and read", `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), {id: "a", n: 1}, function (err, doc) {
				if (err) throw err;
				c.readDocument(c.getAltLink() + "/docs/a", function (err, got) {
					getContext().getResponse().setBody(got.n);
				});
			});
		}`, ``, `1`, false},
		{"conflict to the callback", `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), {id: "a"});
			c.createDocument(c.getSelfLink(), {id: "a"}, function (err) {
				getContext().getResponse().setBody(err.number);
			});
		}`, ``, `409`, false},
		{"conflict thrown without a callback", `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), {id: "a"});
			c.createDocument(c.getSelfLink(), {id: "a"});
		}`, ``, `Entity with the specified id already exists in the system.`, true},
		{"another collection's link", `function () {
			var c = getContext().getCollection(), out = [];
			c.createDocument("dbs/db/colls/other", {id: "x"}, function (err) { out.push(err.number) });
			c.upsertDocument("dbs/zz/colls/c", {id: "x"}, function (err) { out.push(err.number) });
			c.queryDocuments("dbs/db/colls/other", "SELECT * FROM r", {}, function (err) { out.push(err.number) });
			c.readDocuments("/dbs/AA==/colls/BBBB=/", {}, function (err) { out.push(err.number) });
			c.createDocument("/" + c.getAltLink() + "/", {id: "y"}, function (err) { out.push(err ? err.number : "ok") });
			c.queryDocuments("/" + c.getSelfLink(), "SELECT * FROM r", {}, function (err, docs) { out.push(err ? err.number : docs.length) });
			getContext().getResponse().setBody(out);
		}`, ``, `[400,400,400,400,"ok",1]`, false},
		{"throw", `function () { throw new Error("no way") }`, ``, `no way`, true},
		{"query pages", `function () {
			var c = getContext().getCollection(), seen = [];
			for (var i = 0; i < 5; i++) c.createDocument(c.getSelfLink(), {id: "d" + i});
			function page(cont) {
				c.queryDocuments(c.getSelfLink(), "SELECT * FROM r", {pageSize: 2, continuation: cont}, function (err, docs, opts) {
					docs.forEach(function (d) { seen.push(d.id) });
					if (opts.continuation) page(opts.continuation); else getContext().getResponse().setBody(seen);
				});
			}
			page();
		}`, ``, `["d0","d1","d2","d3","d4"]`, false},
		{"no host", `function () { getContext().getResponse().setBody([typeof require, typeof setTimeout, typeof process]) }`, ``, `["undefined","undefined","undefined"]`, false},
		{"log", `function () { console.log("x", {a: 1}); getContext().getResponse().setBody(1) }`, ``, `1`, false},
		{"appendValue", `function () { for (var i = 0; i < 10; i++) getContext().getResponse().appendValue("Body", i) }`, ``, `"0123456789"`, false},
		{"appendValue after setBody", `function () { var r = getContext().getResponse(); r.setBody("a"); r.appendValue("Body", true) }`, ``, `"atrue"`, false},
		{"appendValue elsewhere", `function () { getContext().getResponse().appendValue("Other", 1) }`, ``, `appendValue`, true},
		{"appendBody and __'s request and response", `function () {
			__.response.setBody("a");
			getContext().getResponse().appendBody("b");
			__.response.appendBody(typeof __.request.getBody);
		}`, ``, `"abfunction"`, false},
		{"__ without a callback answers in the body", `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), {id: "a", n: 1});
			c.createDocument(c.getSelfLink(), {id: "b", n: 2});
			__.pluck("n");
		}`, ``, `"[1,2]"`, false},
		{"ErrorCodes", `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), {id: "a"});
			c.createDocument(c.getSelfLink(), {id: "a"}, function (err) {
				getContext().getResponse().setBody([err.number == ErrorCodes.Conflict, ErrorCodes.NotFound, ErrorCodes.RetryWith]);
			});
		}`, ``, `[true,404,449]`, false},
		{"flatten deep, and shallow with isShallow", `function () {
			var c = getContext().getCollection(), out = {};
			c.createDocument(c.getSelfLink(), {id: "a", arr: [1, [2, [3]]]});
			__.chain().pluck("arr").flatten().value(function (err, v) { out.deep = v; });
			__.chain().pluck("arr").flatten(true).value(function (err, v) { out.shallow = v; });
			getContext().getResponse().setBody(out);
		}`, ``, `{"deep":[1,2,3],"shallow":[1,[2,[3]]]}`, false},
		{"unwind", `function () {
			var c = getContext().getCollection(), out = {};
			c.createDocument(c.getSelfLink(), {id: "a", kids: [{n: "k1", pets: ["p1", "p2"]}, {n: "k2", pets: []}]});
			c.createDocument(c.getSelfLink(), {id: "b", kids: [{n: "k3", pets: ["p3"]}]});
			__.unwind(function (d) { return d.kids; }, function (d, k) { return d.id + "/" + k.n; }, function (err, v) { out.pairs = v; });
			__.chain().unwind(function (d) { return d.kids; }).pluck("n").value(function (err, v) { out.kids = v; });
			__.chain().unwind(function (d) { return d.kids; }, function (d, k) { return {id: d.id, k: k}; })
				.unwind(function (dk) { return dk.k.pets; }, function (dk, p) { return dk.k.n + ":" + p; })
				.value(function (err, v) { out.pets = v; });
			try { __.unwind(); } catch (e) { out.missing = e.number; }
			getContext().getResponse().setBody(out);
		}`, ``, `{"pairs":["a/k1","a/k2","b/k3"],"kids":["k1","k2","k3"],"pets":["k1:p1","k1:p2","k3:p3"],"missing":400}`, false},
		{"a body past the bound is a 413 the script may catch", `function () {
			var r = getContext().getResponse(), out = [];
			try { r.setBody("x".repeat(5 << 20)); } catch (e) { out.push(e.number); }
			r.setBody("y".repeat(3 << 20));
			try { r.appendBody("z".repeat(2 << 20)); } catch (e) { out.push(e.number); }
			r.setBody(out);
		}`, ``, `[413,413]`, false},
		{"a body set after every document", `function () {
			var c = getContext().getCollection(), done = [];
			for (var i = 0; i < 3000; i++) { done.push({id: "d" + i, n: i}); getContext().getResponse().setBody(done); }
			getContext().getResponse().setBody(done.length);
		}`, ``, `3000`, false},
		{"a body grown past the bound after it was set", `function () {
			var body = {s: ""};
			getContext().getResponse().setBody(body);
			body.s = "x".repeat(5 << 20);
		}`, ``, `Resulting message would be too large`, true},
		{"a body refused before the rest past the bound is serialized", `function () {
			var body = {s: "x".repeat(5 << 20), after: {toJSON: function () { throw new Error("serialized past the bound"); }}};
			getContext().getResponse().setBody(body);
		}`, ``, `Resulting message would be too large`, true},
		{"the response's getValue and setValue", `function () {
			var r = getContext().getResponse(), out = [];
			r.setValue("Body", {a: 1});
			out.push(r.getValue("Body").a, r.getValue("Other") === undefined);
			try { r.setValue("Other", 1); } catch (e) { out.push(e instanceof TypeError); }
			r.setBody(out);
		}`, ``, `[1,true,true]`, false},
		{"__ from a callback", `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), {id: "a", n: 1}, function () {
				__.map(function (d) { return d.n; }, function (err, ns) { getContext().getResponse().setBody(ns); });
			});
		}`, ``, `[1]`, false},
		{"a document as JSON text", `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), JSON.stringify({id: "s", n: 7}), function (err, doc) { getContext().getResponse().setBody(doc.n); });
		}`, ``, `7`, false},
		{"disableAutomaticIdGeneration", `function () {
			var c = getContext().getCollection(), out = [];
			c.createDocument(c.getSelfLink(), {n: 1}, {disableAutomaticIdGeneration: true}, function (err) { out.push(err ? err.number : "made"); });
			c.createDocument(c.getSelfLink(), {id: "x", n: 1}, {disableAutomaticIdGeneration: true}, function (err) { out.push(err ? err.number : "made"); });
			c.deleteDocument(c.getAltLink() + "/docs/x", function (err, options) { out.push(typeof options); });
			getContext().getResponse().setBody(out);
		}`, ``, `[400,"made","object"]`, false},
		{"abort", `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), {id: "a"});
			try { getContext().abort(new Error("stop here")) } catch (e) {}
			getContext().getResponse().setBody(1);
		}`, ``, `stop here`, true},
		{"abort in a promise", `function () {
			var c = getContext().getCollection();
			Promise.resolve().then(function () {
				c.createDocument(c.getSelfLink(), {id: "a"});
				getContext().abort("no");
			});
			getContext().getResponse().setBody(1);
		}`, ``, `no`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _, err := runProc(t, tc.src, tc.params, Limits{})
			var se *ScriptError
			switch {
			case tc.failed && (err == nil || !errors.As(err, &se) || !strings.Contains(se.Message, tc.body)):
				t.Fatalf("err = %v, want a script error saying %q", err, tc.body)
			case !tc.failed && err != nil:
				t.Fatal(err)
			case !tc.failed && string(res.Body) != tc.body:
				t.Fatalf("body %s, want %s", res.Body, tc.body)
			}
		})
	}
}

// The budget: past it, operations are not accepted and do nothing, and
// the script can say how far it got, for the client to call again.
func TestBudget(t *testing.T) {
	res, m, err := runProc(t, `function (n) {
		var c = getContext().getCollection(), i = 0;
		for (; i < n; i++) if (!c.createDocument(c.getSelfLink(), {id: "d" + i})) break;
		getContext().getResponse().setBody(i);
	}`, `[50]`, Limits{Operations: 20})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Body) != "20" || len(m.docs) != 20 {
		t.Fatalf("body %s, %d documents; want 20 of each", res.Body, len(m.docs))
	}
}

// A script that never ends is stopped at its time limit.
func TestInfiniteLoop(t *testing.T) {
	_, _, err := runProc(t, `function () { for (;;) {} }`, ``, Limits{Time: 200 * time.Millisecond})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
}

// Built-ins that run long without returning to the interpreter are
// stopped too: a backtracking regular expression (regexp2, given the
// scripts' time as its match timeout) and a sort without a comparator
// (given one in JavaScript). Without those, each ran for minutes.
func TestLongBuiltinsAreStopped(t *testing.T) {
	for _, src := range []string{
		`function () { getContext().getResponse().setBody(/^(a+)+(?=b)\1$/.test("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!")); }`,
		`function () { var a = new Array(3000000).fill(1); a.sort(); getContext().getResponse().setBody(a.length); }`,
	} {
		_, _, err := runProc(t, src, ``, Limits{Time: 500 * time.Millisecond})
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("%s: err = %v, want ErrTimeout", src, err)
		}
	}
}

// The built-ins a script may run on millions of items without its time
// limit reaching them (the native ones run where no interrupt is seen)
// are replaced by JavaScript the limit stops: sort, fill and Array.from.
// They keep the language's steps: fill's bounds negative from the end,
// clamped, NaN as 0; from's iterables, array-likes and mapping function.
func TestUnboundedBuiltinsAreScripts(t *testing.T) {
	src := `function () {
		var native = function (f) { return Function.prototype.toString.call(f).indexOf("[native code]") >= 0; };
		getContext().getResponse().setBody([
			native(Array.prototype.sort), native(Array.prototype.fill), native(Array.prototype.push),
			[1, 2, 3, 4, 5].fill(0, 1, -1), [1, 2, 3].fill(9, -2), [1, 2, 3].fill(7, NaN, 2),
			Array.prototype.fill.call({length: 2}, "x"), new Array(3).fill(0, 5), [1, 2].fill(),
			Array.prototype.fill.length, Array.prototype.fill.name, Object.keys(Array.prototype),
			native(Array.from), Array.from("ab"), Array.from([1, 2], function (x, i) { return x * 10 + i; }),
			Array.from({length: 3, 0: "a", 2: "c"}), Array.from(new Set([1, 1, 2])), Array.from(5), Array.from([1, , 3]),
			Array.from({length: 2}, function (v, i) { return this.k + i; }, {k: 7}), Array.from.length, Object.keys(Array),
			(function () { try { Array.from([1], 3); return "no error"; } catch (e) { return e instanceof TypeError; } })()]);
	}`
	res, _, err := runProc(t, src, ``, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `[false,false,true,[1,0,0,0,5],[1,9,9],[7,7,3],{"0":"x","1":"x","length":2},[null,null,null],[null,null],1,"fill",[],` +
		`false,["a","b"],[10,21],["a",null,"c"],[1,2],[],[1,null,3],[7,8],1,[],true]`
	if string(res.Body) != want {
		t.Errorf("body %s, want %s", res.Body, want)
	}
}

// Sorting without a comparator keeps the language's order: by string,
// undefined last, holes after that; a comparator is still used, and one
// that is not a function is still a TypeError.
func TestDefaultSortOrder(t *testing.T) {
	src := `function () {
		var a = [10, 9, 1, undefined, "b", "a", , null, true];
		a.sort();
		var out = a.map(function (x) { return x === undefined ? "u" : String(x); });
		out.push(a.length, 5 in a, 8 in a);
		out.push([3, 1, 2].sort(function (x, y) { return y - x; }).join(""));
		try { [1].sort(1); out.push("no error"); } catch (e) { out.push(e instanceof TypeError); }
		try { [Symbol("a"), Symbol("b")].sort(); out.push("no error"); } catch (e) { out.push(e instanceof TypeError); }
		out.push(Array.prototype.sort.name);
		getContext().getResponse().setBody(out);
	}`
	res, _, err := runProc(t, src, ``, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `["1","10","9","a","b","null","true","u",null,9,true,false,"321",true,true,"sort"]` // the hole maps to a hole
	if string(res.Body) != want {
		t.Errorf("body %s, want %s", res.Body, want)
	}
}

// A body that does not compile, or is not a function, fails when it runs:
// a compile error is marked as one, for the service's "while compiling".
func TestBodyThatDoesNotCompile(t *testing.T) {
	for _, tc := range []struct {
		src     string
		compile bool
	}{
		{`function ( { }`, true},
		{"Line Separator (\u2028) & Next Line (\u0085)", true},
		{`1 + 1`, false},
	} {
		_, _, err := runProc(t, tc.src, ``, Limits{})
		var se *ScriptError
		if !errors.As(err, &se) || se.Compile != tc.compile {
			t.Errorf("run %q: %#v, want a script error with Compile %v", tc.src, err, tc.compile)
		}
	}
}

func TestConsoleLogFormat(t *testing.T) {
	tests := []struct{ args, want string }{
		{`"The value of %s is %s.", "x", 1`, `The value of x is 1.`},
		{`"x", {a: 1}`, `x {"a":1}`},
		{`"%d%% of %i, %f", "42", 7.9, 0.5`, `42% of 7, 0.5`},
		{`"%j and %o", {a: [1]}, "s"`, `{"a":[1]} and s`},
		{`"%s and %s", "one"`, `one and %s`},
		{`"%x %s", "a", "b", 3`, `%x a b 3`},
		{`1, "two"`, `1 two`},
		{`"", "a"`, ` a`},
		{`"trailing %"`, `trailing %`},
	}
	for _, tc := range tests {
		res, _, err := runProc(t, `function () { console.log(`+tc.args+`) }`, ``, Limits{Logging: true})
		if err != nil {
			t.Fatalf("console.log(%s): %v", tc.args, err)
		}
		if len(res.Logs) != 1 || res.Logs[0] != tc.want {
			t.Errorf("console.log(%s) logged %q, want %q", tc.args, res.Logs, tc.want)
		}
	}
}

func TestTriggers(t *testing.T) {
	m := &memColl{docs: map[string][]byte{}}
	ctx := context.Background()
	// A pre-trigger stamps the request's document.
	res, err := RunTrigger(ctx, `function () {
		var r = getContext().getRequest(), d = r.getBody();
		d.stamped = r.getOperationType();
		r.setBody(d);
	}`, &TriggerCall{Operation: "Create", Request: []byte(`{"id":"a"}`)}, m, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Body) != `{"id":"a","stamped":"Create"}` {
		t.Fatalf("pre-trigger body %s", res.Body)
	}
	// A post-trigger reads the stored document and writes another.
	_, err = RunTrigger(ctx, `function () {
		var c = getContext().getCollection(), d = getContext().getResponse().getBody();
		c.upsertDocument(c.getSelfLink(), {id: "summary", last: d.id});
	}`, &TriggerCall{Operation: "Create", Request: []byte(`{"id":"a"}`), Response: []byte(`{"id":"a","_ts":1}`)}, m, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if string(m.docs["summary"]) != `{"id":"summary","last":"a"}` {
		t.Fatalf("summary %s", m.docs["summary"])
	}
	// getValue and setValue name the body by its key "Body".
	res, err = RunTrigger(ctx, `function () {
		var r = getContext().getRequest(), d = r.getValue("Body");
		d.other = r.getValue("Other") === undefined;
		r.setValue("Body", d);
	}`, &TriggerCall{Operation: "Create", Request: []byte(`{"id":"a"}`)}, m, Limits{})
	if err != nil || string(res.Body) != `{"id":"a","other":true}` {
		t.Fatalf("getValue and setValue of the request: %s, %v", res.Body, err)
	}
	// A post-trigger may not change the request.
	_, err = RunTrigger(ctx, `function () { getContext().getRequest().setBody({}) }`,
		&TriggerCall{Operation: "Create", Request: []byte(`{}`), Response: []byte(`{}`)}, m, Limits{})
	var se *ScriptError
	if !errors.As(err, &se) {
		t.Fatalf("setBody in a post-trigger: %v", err)
	}
}

func TestShorthand(t *testing.T) {
	res, _, err := runProc(t, `function () {
		var c = getContext().getCollection();
		for (var i = 0; i < 6; i++) c.createDocument(c.getSelfLink(), {id: "d" + i, n: i, tags: [i, -i]});
		var out = {};
		__.filter(function (d) { return d.n % 2 === 0; }, function (err, docs) { out.even = docs.map(function (d) { return d.id; }); });
		__.chain().filter(function (d) { return d.n > 2; }).sortByDescending(function (d) { return d.n; }).pluck("n").value(function (err, v) { out.chained = v; });
		__.map(function (d) { return d.tags; }, function (err, v) { out.mapped = v.length; });
		var r = __.value(function (err, v) { out.all = v.length; });
		out.accepted = r.isAccepted;
		out.link = __.getSelfLink() === c.getSelfLink();
		getContext().getResponse().setBody(out);
	}`, ``, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"even":["d0","d2","d4"],"chained":[5,4,3],"mapped":6,"all":6,"accepted":true,"link":true}`
	if string(res.Body) != want {
		t.Fatalf("%s\nwant %s", res.Body, want)
	}
}

// A charge budget stops operations as the operation count does.
func TestChargeBudget(t *testing.T) {
	spent := 0.0
	m := &memColl{docs: map[string][]byte{}}
	res, err := RunProcedure(context.Background(), `function () {
		var c = getContext().getCollection(), i = 0;
		for (; i < 100; i++) if (!c.createDocument(c.getSelfLink(), {id: "d" + i})) break;
		getContext().getResponse().setBody(i);
	}`, nil, &chargingColl{memColl: m, spent: &spent}, Limits{Charge: 50, Spent: func() float64 { return spent }})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Body) != "5" {
		t.Fatalf("accepted %s creates at 10 RU each under 50 RU, want 5", res.Body)
	}
}

type chargingColl struct {
	*memColl
	spent *float64
}

func (c *chargingColl) Create(doc []byte, upsert bool) ([]byte, error) {
	*c.spent += 10
	return c.memColl.Create(doc, upsert)
}

// A script that recurses without end fails at once with the engine's
// error, well before its time limit.
func TestRecursionIsBounded(t *testing.T) {
	_, _, err := runProc(t, `function () { function f(n) { return f(n + 1) + 1; } f(0); }`, ``, Limits{Time: time.Minute})
	var se *ScriptError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a script error", err)
	}
	f := NewFunctions(func(string) (string, error) {
		return `function (n) { function g(k) { return g(k + 1); } return g(n); }`, nil
	}, time.Minute)
	defer f.Close()
	if _, err := f.Call("deep", [][]byte{[]byte("1")}); !errors.As(err, &se) {
		t.Fatalf("a UDF that recurses: %v, want a script error", err)
	}
}

// A script that allocates without end is stopped by the memory guard,
// long before its time limit, with a RangeError; so is a UDF. The guard
// stops sampling when no script runs.
func TestMemoryIsBounded(t *testing.T) {
	old := MemoryLimit
	MemoryLimit = 64 << 20
	defer func() { MemoryLimit = old }()
	hog := `var a = []; for (;;) { a.push("x".repeat(1 << 20) + a.length); }`
	_, _, err := runProc(t, `function () { `+hog+` }`, ``, Limits{Time: time.Minute})
	var se *ScriptError
	if !errors.As(err, &se) || !strings.Contains(se.Message, "memory") {
		t.Fatalf("err = %v, want a script error about memory", err)
	}
	f := NewFunctions(func(string) (string, error) {
		return `function (n) { ` + hog + ` }`, nil
	}, time.Minute)
	defer f.Close()
	if _, err := f.Call("hog", [][]byte{[]byte("1")}); !errors.As(err, &se) || !strings.Contains(se.Message, "memory") {
		t.Fatalf("a UDF that allocates without end: %v, want a script error about memory", err)
	}
	// An ordinary script beside it is not affected.
	if _, _, err := runProc(t, `function () { var a = []; for (var i = 0; i < 1000; i++) a.push(i); }`, ``, Limits{}); err != nil {
		t.Fatal(err)
	}
}

// Text nested past maxNesting is refused before it is parsed, wherever a
// script parses text: JSON.parse, eval and the function constructors
// throw a RangeError the script catches, and a source so nested does not
// compile. Parsing such text by recursion would overflow the process's
// stack. Below the bound each works as before.
func TestNestedTextIsRefusedBeforeParsing(t *testing.T) {
	deep := `"[".repeat(3000000) + "]".repeat(3000000)`
	for _, tc := range []struct {
		name, src, body string
	}{
		{"JSON.parse", `function () { try { JSON.parse(` + deep + `); } catch (e) { getContext().getResponse().setBody(String(e)); } }`, `"RangeError: the text nests brackets deeper than a script may parse (10000 levels)"`},
		{"eval", `function () { try { eval(` + deep + `); } catch (e) { getContext().getResponse().setBody(e instanceof Error); } }`, `true`},
		{"Function", `function () { try { Function("return " + ` + deep + `); } catch (e) { getContext().getResponse().setBody(e instanceof Error); } }`, `true`},
		{"a function's constructor", `function () { try { (function () {}).constructor("return " + ` + deep + `); } catch (e) { getContext().getResponse().setBody(e instanceof Error); } }`, `true`},
		{"a generator's constructor", `function () { try { Object.getPrototypeOf(function* () {}).constructor(` + deep + `); } catch (e) { getContext().getResponse().setBody(e instanceof Error); } }`, `true`},
		{"an async function's constructor", `function () { try { Object.getPrototypeOf(async function () {}).constructor(` + deep + `); } catch (e) { getContext().getResponse().setBody(e instanceof Error); } }`, `true`},
		// The constructors are wrapped once text could define such a
		// function; here only text made at run time does.
		{"an async function made by eval", `function () { var f = eval("(a" + "sync function () {})"); try { Object.getPrototypeOf(f).constructor(` + deep + `); } catch (e) { getContext().getResponse().setBody(e instanceof RangeError); } }`, `true`},
		{"a generator made by Function", `function () { var g = Function("return function" + String.fromCharCode(42) + " () {}")(); try { Object.getPrototypeOf(g).constructor(` + deep + `); } catch (e) { getContext().getResponse().setBody(e instanceof RangeError); } }`, `true`},
		{"JSON.stringify", `function () { var o = {}; for (var i = 0; i < 20000; i++) o = {a: o}; try { JSON.stringify(o); } catch (e) { getContext().getResponse().setBody(e instanceof RangeError); } }`, `true`},
		{"a response body", `function () { var o = {}; for (var i = 0; i < 20000; i++) o = [o]; getContext().getResponse().setBody(o); }`, ``},
		{"stringify's replacers", `function () {
			var o = {a: 1, b: {a: 2, c: 3}, c: [1, {a: 4, d: 5}]};
			getContext().getResponse().setBody([JSON.stringify(o, ["a", "c"]), JSON.stringify(o, function (k, v) { return k === "a" ? v * 10 : v; }), JSON.stringify({x: [1]}, null, 1), JSON.stringify("s"), String(JSON.stringify(undefined))]); }`,
			`["{\"a\":1,\"c\":[1,{\"a\":4}]}","{\"a\":10,\"b\":{\"a\":20,\"c\":3},\"c\":[1,{\"a\":40,\"d\":5}]}","{\n \"x\": [\n  1\n ]\n}","\"s\"","undefined"]`},
		{"a String object", `function () { try { JSON.parse(new String(` + deep + `)); } catch (e) { getContext().getResponse().setBody(e instanceof RangeError); } }`, `true`},
		{"an object's toString", `function () { var o = {toString: function () { return ` + deep + `; }}; var r = []; try { JSON.parse(o); } catch (e) { r.push(e instanceof RangeError); } try { Function(o); } catch (e) { r.push(e instanceof RangeError); } getContext().getResponse().setBody(r); }`, `[true,true]`},
		{"a constructor's parameters and body together", `function () { try { Function("a = " + "(".repeat(6000), "return " + "(".repeat(6000)); } catch (e) { getContext().getResponse().setBody(e instanceof RangeError); } }`, `true`},
		{"brackets inside JSON strings", `function (p) { var s = ":(".repeat(20000); getContext().getResponse().setBody([JSON.parse(JSON.stringify({s: s})).s.length, p.length]); }`, `[40000,20000]`},
		{"stringify's key lists", `function () {
			getContext().getResponse().setBody([JSON.stringify({a: 1, b: 2}, ["b", "a"]), JSON.stringify(Object.create({a: 1}), ["a"]),
				JSON.stringify({"": 1, a: 2}, ["a"]), JSON.stringify({"null": 1, a: 2}, [null, "a"]), JSON.stringify([1, {a: 1, b: 2}], ["a"]),
				JSON.stringify({1: "x", b: new String("s")}, [1, "b"])]); }`,
			`["{\"b\":2,\"a\":1}","{\"a\":1}","{\"a\":2}","{\"a\":2}","[1,{\"a\":1}]","{\"1\":\"x\",\"b\":\"s\"}"]`},
		{"below the bound", `function () {
			var r = [JSON.parse('{"a":[1,{"b":2}]}', function (k, v) { return k === "b" ? v * 10 : v; }).a[1].b,
				eval("1 + 2"), new Function("a", "b", "return a + b")(1, 2), Function("return 4")(),
				(function () {}).constructor("return 5")(), (function () {}) instanceof Function,
				JSON.parse("[".repeat(5000) + "]".repeat(5000)).length];
			getContext().getResponse().setBody(r); }`, `[20,3,3,4,5,true,1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := ``
			if tc.name == "brackets inside JSON strings" {
				params = `["` + strings.Repeat("[", 20000) + `"]`
			}
			// A minute, not the default 5 s: what is checked is the
			// nesting bound, and a machine busy with other tests ran
			// "a response body" (0.3 s alone) past 5 s.
			res, _, err := runProc(t, tc.src, params, Limits{Time: time.Minute})
			if tc.body == "" {
				// The body cannot be written: the run fails.
				if err == nil || !strings.Contains(err.Error(), "10000 levels") {
					t.Errorf("%v, want the body refused", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Body) != tc.body {
				t.Errorf("body %s, want %s", res.Body, tc.body)
			}
		})
	}
	_, _, err := runProc(t, `function () { return `+strings.Repeat("(", 20000)+"1"+strings.Repeat(")", 20000)+` }`, ``, Limits{})
	var se *ScriptError
	if !errors.As(err, &se) || !se.Compile {
		t.Errorf("a source nested 20,000 deep: %v, want a compile error", err)
	}
	// A user-defined function is guarded alike.
	fns := NewFunctions(func(string) (string, error) {
		return `function (n) { try { JSON.parse("[".repeat(n) + "]".repeat(n)); return "parsed"; } catch (e) { return String(e instanceof RangeError); } }`, nil
	}, 0)
	defer fns.Close()
	for n, want := range map[string]string{"3000000": `"true"`, "100": `"parsed"`} {
		if out, err := fns.Call("f", [][]byte{[]byte(n)}); err != nil || string(out) != want {
			t.Errorf("a UDF parsing text nested %s deep: %s, %v; want %s", n, out, err, want)
		}
	}
}

// Each create called from the last one's callback, as bulk imports are
// written for the service: the callbacks run one after another, not one
// inside another, so the chain reaches the operation budget (and reports
// how far it got) rather than the bound on nested calls.
func TestChainedCallbacks(t *testing.T) {
	res, m, err := runProc(t, `function (n) {
		var c = getContext().getCollection(), done = 0;
		function next() {
			if (!c.createDocument(c.getSelfLink(), {id: "d" + done}, created)) getContext().getResponse().setBody(done);
		}
		function created(err) {
			if (err) throw err;
			if (++done == n) getContext().getResponse().setBody(done); else next();
		}
		next();
	}`, `[1500]`, Limits{Operations: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Body) != "1000" || len(m.docs) != 1000 {
		t.Fatalf("body %s, %d documents; want 1000 of each", res.Body, len(m.docs))
	}
}

// Logs are kept only for a client that asked for them, and within the
// bound of the header that carries them: past it, the log call throws a
// 413 the script may catch, and one it does not catch fails the script.
func TestLogBound(t *testing.T) {
	res, _, err := runProc(t, `function () { console.log("quiet") }`, ``, Limits{})
	if err != nil || len(res.Logs) != 0 {
		t.Fatalf("without logging: %v, %q; want no logs", err, res.Logs)
	}
	res, _, err = runProc(t, `function () {
		var line = new Array(1025).join("x"), n = 0;
		try { for (;;) { console.log(line); n++; } } catch (e) { getContext().getResponse().setBody([n, e.number]); }
	}`, ``, Limits{Logging: true})
	if err != nil || string(res.Body) != `[7,413]` {
		t.Fatalf("logging past the bound: %v, %s; want 7 lines kept and a 413", err, res.Body)
	}
	_, _, err = runProc(t, `function () { for (;;) console.log(new Array(1025).join("x")); }`, ``, Limits{Logging: true})
	var se *ScriptError
	if !errors.As(err, &se) || !strings.Contains(se.Message, "x-ms-documentdb-script-log-results") {
		t.Fatalf("an uncaught 413: %v, want a script error naming the header", err)
	}
}

// Past the operation budget, __'s functions are not accepted, as every
// operation past it is: they return isAccepted false and call nothing, and
// the script goes on, keeping what it wrote.
func TestShorthandPastTheBudget(t *testing.T) {
	src := `function () {
		var c = getContext().getCollection(), out = [];
		c.createDocument(c.getSelfLink(), {id: "a"});
		while (c.readDocument(c.getAltLink() + "/docs/a")) {}
		out.push(__.filter(function () { return true; }, function () { out.push("called"); }).isAccepted);
		out.push(__.chain().pluck("id").value().isAccepted);
		getContext().getResponse().setBody(out);
	}`
	res, m, err := runProc(t, src, ``, Limits{Operations: 5})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Body) != `[false,false]` || len(m.docs) != 1 {
		t.Errorf("body %s and %d documents, want [false,false] and the one created", res.Body, len(m.docs))
	}
}
