// Package script runs the server-side JavaScript of a container, stored
// procedures first, on goja (a JavaScript engine written in Go: no cgo, no
// host access unless given). A script sees only the server-side API the
// service documents (getContext, its collection, request and response,
// console.log); the operations on documents are the engine's, handed in
// as a Collection bound to one transaction.
package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/dlclark/regexp2/v2"
	"math"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/dop251/goja"
)

// Collection is what a script's getContext().getCollection() does, inside
// the transaction the script runs in. Documents travel as JSON. Errors
// that are the caller's (a missing document, a conflict) are *Error; any
// other error ends the script and fails the request.
type Collection interface {
	SelfLink() string
	AltLink() string
	Create(doc []byte, upsert bool) ([]byte, error)
	Replace(link string, doc []byte, ifMatch string) ([]byte, error)
	Read(link string) ([]byte, error)
	Delete(link string, ifMatch string) error
	// Query runs a query over the script's partition and returns up to
	// pageSize documents from continuation on, and the next continuation
	// ("" at the end).
	Query(query string, params map[string]any, pageSize int, continuation string) ([][]byte, string, error)
}

// Error is an error of a document operation a script can catch: its
// callback receives {number: Status, body: Message}.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Limits bound one execution.
type Limits struct {
	// Time is how long the script may run (default 5 s).
	Time time.Duration
	// Operations is how many document operations it may start; past
	// it, each one returns false (not accepted) and does nothing, as the
	// service answers a script whose budget is spent (default 1,000).
	Operations int
	// Charge is the request units its operations may spend (0: no
	// bound besides Operations); past it, operations are not accepted
	// either. Spent tells what they have spent so far.
	Charge float64
	Spent  func() float64
	// Logging keeps what console.log writes, for the client that asked
	// for it; without it console.log does nothing.
	Logging bool
}

// MaxLogBytes bounds what console.log writes, as the header that carries
// it to the client: its lines joined by newlines and percent-escaped
// (x-ms-documentdb-script-log-results). Past it a log call throws a 413,
// as the service's does: an HTTP client refuses a reply whose headers are
// too long, and would report a failure for a script whose writes were
// kept.
const MaxLogBytes = 8 << 10

// Result is what an execution returns to the client.
type Result struct {
	Body []byte   // the response body set by the script, JSON; nil when none
	Logs []string // console.log lines
}

// ScriptError is a script that threw, or failed to compile: the message
// is the script's (with its position where the engine gives one).
type ScriptError struct {
	Message string
	// Compile is set when the body did not compile: the service accepts
	// such a body when it is written and reports it when it is run.
	Compile bool
}

func (e *ScriptError) Error() string { return e.Message }

// ErrTimeout ends a script that ran past its time limit.
var ErrTimeout = errors.New("the script ran past its time limit")

// RunProcedure runs the stored procedure src with the parameters params (a
// JSON array) against coll.
func RunProcedure(ctx context.Context, src string, params []byte, coll Collection, lim Limits) (*Result, error) {
	return run(ctx, src, params, coll, lim, nil)
}

// TriggerCall is what a trigger sees of the operation it runs for: the
// request's document (which a pre-trigger may replace with
// getRequest().setBody) and, for a post-trigger, the stored one
// (getResponse().getBody()).
type TriggerCall struct {
	Operation string // Create, Replace, Upsert or Delete
	Request   []byte // the document of the request; nil for a delete
	Response  []byte // the document as stored; post-triggers only
}

// RunTrigger runs trigger src for call against coll. Result.Body is the
// request's document as a pre-trigger left it, or the response's body as
// a post-trigger left it.
func RunTrigger(ctx context.Context, src string, call *TriggerCall, coll Collection, lim Limits) (*Result, error) {
	return run(ctx, src, nil, coll, lim, call)
}

// A regular expression with backreferences or lookaround runs in regexp2,
// whose matching backtracks and checks no time limit of the script's; goja
// sets it no timeout. A match that times out reads as no match, so the
// timeout is a script's time limit (maxScriptTime): a match cut short
// leaves the script past its own limit, stopped as it goes on.
func init() { regexp2.DefaultMatchTimeout = maxScriptTime }

// maxScriptTime is the time a stored procedure, trigger or function call
// runs for at most: the service's 5 seconds.
const maxScriptTime = 5 * time.Second

func run(ctx context.Context, src string, params []byte, coll Collection, lim Limits, trig *TriggerCall) (*Result, error) {
	if lim.Time <= 0 {
		lim.Time = maxScriptTime
	}
	if lim.Operations <= 0 {
		lim.Operations = 1000
	}
	vm := goja.New()
	vm.SetFieldNameMapper(goja.UncapFieldNameMapper())
	// A script that recurses without end fails at this depth, as a
	// RangeError it can see, instead of growing its stack until the time
	// limit.
	vm.SetMaxCallStackSize(maxCallDepth)
	defer watch(vm)()
	x := &execution{vm: vm, coll: coll, lim: lim, res: &Result{}, trig: trig}
	if err := x.install(); err != nil {
		return nil, err
	}
	stop := time.AfterFunc(lim.Time, func() { vm.Interrupt(ErrTimeout) })
	defer stop.Stop()
	done := make(chan struct{})
	defer close(done)
	// The request's own deadline or cancellation stops it too.
	go func() {
		select {
		case <-ctx.Done():
			vm.Interrupt(ctx.Err())
		case <-done:
		}
	}()

	prog, err := compiled("script", src)
	if err != nil {
		return nil, err
	}
	if err := x.guards.compiling(src); err != nil {
		return nil, x.fail(err)
	}
	fn, err := vm.RunProgram(prog)
	if err != nil {
		return nil, x.fail(err)
	}
	call, ok := goja.AssertFunction(fn)
	if !ok {
		return nil, &ScriptError{Message: "the stored procedure's body is not a function"}
	}
	var args []goja.Value
	if len(params) > 0 {
		var list []any
		if err := json.Unmarshal(params, &list); err != nil {
			return nil, &ScriptError{Message: "the parameters must be a JSON array: " + err.Error()}
		}
		for _, p := range list {
			args = append(args, x.fromJSONValue(p))
		}
	}
	if _, err := call(goja.Undefined(), args...); err != nil {
		return nil, x.fail(err)
	}
	if x.failed != nil {
		return nil, x.failed
	}
	if trig != nil && trig.Response == nil {
		// A pre-trigger's result is the request's document, as it left
		// it; a post-trigger's is the response's body, the stored
		// document unless it set another.
		x.body = x.request
	}
	if err := x.finishBody(); err != nil {
		return nil, err
	}
	return x.res, nil
}

// execution is one run of a script.
type execution struct {
	vm   *goja.Runtime
	coll Collection
	lim  Limits
	ops  int
	res  *Result
	body goja.Value // the response body
	// trig is the operation a trigger runs for; nil for a procedure.
	trig    *TriggerCall
	request goja.Value // the request's document, for a trigger
	// failed is an error of the engine (not the script's) met during a
	// call: it ends the execution whatever the script does with it.
	failed error
	guards *guards
	// calling is set while a document operation's callback runs; the
	// callbacks of the operations it calls wait in queued until it has
	// returned (settle).
	calling bool
	queued  []func()
}

// fail turns what the engine returned into the execution's error.
func (x *execution) fail(err error) error {
	if x.failed != nil {
		return x.failed
	}
	if e, ok := scriptFailure(err); ok {
		return e
	}
	return err
}

// scriptFailure is what a goja error means for the client, when it is the
// script's doing or its stopping: a ScriptError, or why it was stopped.
func scriptFailure(err error) (error, bool) {
	var intr *goja.InterruptedError
	if errors.As(err, &intr) {
		return interrupted(intr), true
	}
	var exc *goja.Exception
	if errors.As(err, &exc) {
		return &ScriptError{Message: exceptionMessage(exc)}, true
	}
	var deep *goja.StackOverflowError
	if errors.As(err, &deep) {
		return &ScriptError{Message: fmt.Sprintf("RangeError: Maximum call stack size exceeded (%d calls)", maxCallDepth)}, true
	}
	var syn *goja.CompilerSyntaxError
	if errors.As(err, &syn) {
		return &ScriptError{Message: syn.Error()}, true
	}
	return nil, false
}

// exceptionMessage is what the script threw: an Error's message, or the
// thrown value as text.
func exceptionMessage(exc *goja.Exception) string {
	v := exc.Value()
	if o, ok := v.(*goja.Object); ok {
		if m := o.Get("message"); m != nil && !goja.IsUndefined(m) {
			return m.String()
		}
	}
	if v == nil {
		return exc.Error()
	}
	return v.String()
}

// install defines the globals a script sees: getContext, console and
// nothing of the host.
func (x *execution) install() error {
	vm := x.vm
	var err error
	if x.guards, err = guardParsers(vm); err != nil {
		return err
	}
	coll := vm.NewObject()
	set := func(o *goja.Object, name string, fn func(goja.FunctionCall) goja.Value) {
		_ = o.Set(name, fn)
	}
	set(coll, "getSelfLink", func(goja.FunctionCall) goja.Value { return vm.ToValue(x.coll.SelfLink()) })
	set(coll, "getAltLink", func(goja.FunctionCall) goja.Value { return vm.ToValue(x.coll.AltLink()) })
	set(coll, "createDocument", func(c goja.FunctionCall) goja.Value { return x.write(c, false) })
	set(coll, "upsertDocument", func(c goja.FunctionCall) goja.Value { return x.write(c, true) })
	set(coll, "replaceDocument", x.replace)
	set(coll, "readDocument", x.read)
	set(coll, "deleteDocument", x.remove)
	set(coll, "queryDocuments", x.query)
	set(coll, "readDocuments", func(c goja.FunctionCall) goja.Value {
		// readDocuments(link, [options], [callback]) is a query of all.
		args := append([]goja.Value{c.Argument(0), vm.ToValue("SELECT * FROM root r")}, c.Arguments[min(1, len(c.Arguments)):]...)
		return x.query(goja.FunctionCall{This: c.This, Arguments: args})
	})

	response := vm.NewObject()
	// A string past the bound is refused as it is set. Any other body is
	// measured once, when the script returns (finishBody): a script may
	// set its body after every document it writes, and writing the body
	// out each time would make that quadratic.
	setResponseBody := func(c goja.FunctionCall) goja.Value {
		if v := c.Argument(0); v.ExportType() == reflectString && len(v.String()) > maxBodyBytes {
			panic(x.scriptError(bodyTooLarge()))
		}
		x.body = c.Argument(0)
		return goja.Undefined()
	}
	set(response, "setBody", setResponseBody)
	// appendValue("Body", v), or appendBody(v), adds v, as a string, to
	// the end of the body.
	appendBody := func(v goja.Value) goja.Value {
		add := v.String()
		if x.body == nil || goja.IsUndefined(x.body) || goja.IsNull(x.body) {
			if len(add) > maxBodyBytes {
				panic(x.scriptError(bodyTooLarge()))
			}
			x.body = vm.ToValue(add)
		} else {
			old := x.body.String()
			if len(old)+len(add) > maxBodyBytes {
				panic(x.scriptError(bodyTooLarge()))
			}
			x.body = vm.ToValue(old + add)
		}
		return goja.Undefined()
	}
	set(response, "appendValue", func(c goja.FunctionCall) goja.Value {
		if !strings.EqualFold(c.Argument(0).String(), "body") {
			panic(vm.NewTypeError("appendValue can only append to 'Body'"))
		}
		return appendBody(c.Argument(1))
	})
	set(response, "appendBody", func(c goja.FunctionCall) goja.Value { return appendBody(c.Argument(0)) })
	getResponseBody := func(goja.FunctionCall) goja.Value {
		if x.body == nil {
			return goja.Undefined()
		}
		return x.body
	}
	set(response, "getBody", getResponseBody)
	request := vm.NewObject()
	if x.trig != nil {
		x.request = x.fromJSON(x.trig.Request)
		if x.trig.Response != nil {
			x.body = x.fromJSON(x.trig.Response)
		}
	}
	getRequestBody := func(goja.FunctionCall) goja.Value {
		if x.request == nil {
			return goja.Undefined()
		}
		return x.request
	}
	setRequestBody := func(c goja.FunctionCall) goja.Value {
		if x.trig == nil || x.trig.Response != nil {
			panic(vm.NewTypeError("only a pre-trigger may change the request's body"))
		}
		x.request = c.Argument(0)
		return goja.Undefined()
	}
	set(request, "getBody", getRequestBody)
	set(request, "setBody", setRequestBody)
	set(request, "getValue", byKey(vm, getRequestBody))
	set(request, "setValue", byKey(vm, setRequestBody))
	set(response, "getValue", byKey(vm, getResponseBody))
	set(response, "setValue", byKey(vm, setResponseBody))
	set(request, "getOperationType", func(goja.FunctionCall) goja.Value {
		if x.trig == nil {
			return goja.Undefined()
		}
		return vm.ToValue(x.trig.Operation)
	})

	context := vm.NewObject()
	set(context, "getCollection", func(goja.FunctionCall) goja.Value { return coll })
	set(context, "getResponse", func(goja.FunctionCall) goja.Value { return response })
	set(context, "getRequest", func(goja.FunctionCall) goja.Value { return request })
	// abort(err) ends the script and keeps none of its writes, also from a
	// promise's callback, where a throw only rejects the promise.
	set(context, "abort", func(c goja.FunctionCall) goja.Value {
		msg := "The script was aborted."
		if v := c.Argument(0); !goja.IsUndefined(v) && !goja.IsNull(v) {
			msg = v.String()
			if o, ok := v.(*goja.Object); ok {
				if m := o.Get("message"); m != nil && !goja.IsUndefined(m) {
					msg = m.String()
				}
			}
		}
		if x.failed == nil {
			x.failed = &ScriptError{Message: msg}
		}
		panic(vm.NewGoError(x.failed))
	})
	if err := vm.Set("getContext", func(goja.FunctionCall) goja.Value { return context }); err != nil {
		return err
	}
	console := vm.NewObject()
	logBytes := 0
	set(console, "log", func(c goja.FunctionCall) goja.Value {
		if !x.lim.Logging {
			return goja.Undefined()
		}
		line := x.format(c.Arguments)
		if logBytes += len(url.PathEscape(line)) + len("%0A"); logBytes > MaxLogBytes {
			panic(x.scriptError(&Error{Status: 413, Message: fmt.Sprintf("Resulting message would be too large because of \"x-ms-documentdb-script-log-results\" (more than %d bytes). Return from the script with the current message and call it again, or log less.", MaxLogBytes)}))
		}
		x.res.Logs = append(x.res.Logs, line)
		return goja.Undefined()
	})
	if err := vm.Set("console", console); err != nil {
		return err
	}
	// ErrorCodes names the statuses an operation's error carries in its
	// number, as the server-side API documents them.
	codes := vm.NewObject()
	for _, c := range errorCodes {
		_ = codes.Set(c.name, c.status)
	}
	if err := vm.Set("ErrorCodes", codes); err != nil {
		return err
	}
	// __ is made the first time a script names it: making it costs a
	// tenth of an empty script's run, and few scripts use it.
	var short goja.Value
	get := func(goja.FunctionCall) goja.Value {
		if short == nil {
			v, err := vm.RunProgram(shorthandProgram)
			if err != nil {
				panic(err)
			}
			build, _ := goja.AssertFunction(v)
			if short, err = build(goja.Undefined(), coll, vm.ToValue(x.readAll)); err != nil {
				panic(err)
			}
		}
		return short
	}
	put := func(c goja.FunctionCall) goja.Value {
		short = c.Argument(0)
		return goja.Undefined()
	}
	// No timers, modules or host objects: goja has none unless given.
	return vm.GlobalObject().DefineAccessorProperty("__", vm.ToValue(get), vm.ToValue(put), goja.FLAG_TRUE, goja.FLAG_TRUE)
}

// maxCallDepth bounds a script's call stack.
const maxCallDepth = 2000

// shorthandProgram is shorthand compiled once for every execution: a
// function of the collection that returns __.
var shorthandProgram = goja.MustCompile("shorthand", shorthand, false)

// compiled returns src compiled as a function expression, from the cache
// of compiled sources when it was compiled before (a replaced script has
// another source, so it is compiled anew).
func compiled(name, src string) (*goja.Program, error) {
	if p, ok := programs.Load(src); ok {
		return p.(*goja.Program), nil
	}
	if nesting(src, false) > maxNesting {
		return nil, &ScriptError{Message: "SyntaxError: " + errTooNested, Compile: true}
	}
	p, err := goja.Compile(name, "("+src+"\n)", false)
	if err != nil {
		return nil, &ScriptError{Message: err.Error(), Compile: true}
	}
	v, _ := programs.LoadOrStore(src, p)
	return v.(*goja.Program), nil
}

// shorthand makes __, the collection with the documented query
// functions over the script's partition: filter, map, pluck, sortBy,
// sortByDescending, flatten, unwind and value, alone (each with [options]
// and [callback]) or chained (__.chain()…value()). Each reads the
// partition's documents in pages, as queryDocuments would; past the
// operation budget it is not accepted, and does nothing.
const shorthand = `(function (coll, readAll) {
  var sh = Object.create(coll);
  sh.request = getContext().getRequest();
  sh.response = getContext().getResponse();
  ["getSelfLink", "getAltLink", "createDocument", "upsertDocument", "replaceDocument", "readDocument",
   "deleteDocument", "queryDocuments", "readDocuments"].forEach(function (name) {
    sh[name] = function () { return coll[name].apply(coll, arguments); };
  });
  function all() { return readAll(); }
  var steps = {
    filter: function (docs, f) { return docs.filter(function (d) { return f.call(d, d); }); },
    map: function (docs, f) { return docs.map(function (d) { return f.call(d, d); }); },
    pluck: function (docs, name) { return docs.map(function (d) { return d[name]; }); },
    // flatten([isShallow]): every level of nested arrays, or with
    // isShallow the first only.
    flatten: function (docs, shallow) {
      var out = [];
      (function flat(a, depth) { a.forEach(function (x) { Array.isArray(x) && (!shallow || depth === 0) ? flat(x, depth + 1) : out.push(x); }); })(docs, 0);
      return out;
    },
    // unwind(collectionSelector, [resultSelector]): each document joined
    // with the items of its inner collection; a result that is an array
    // adds its items, as concat adds them.
    unwind: function (docs, inner, result) {
      if (!inner) { throw bad('When using "unwind", "collectionSelector" must be used.'); }
      if (typeof inner !== "function") { throw bad('When using "unwind", "collectionSelector" must be a function.'); }
      var out = [];
      docs.forEach(function (d) {
        var items = inner(d);
        var add = function (v) { if (Array.isArray(v)) { out.push.apply(out, v); } else { out.push(v); } };
        if (!result) { add(items); return; }
        Array.prototype.forEach.call(items, function (y) { add(result(d, y)); });
      });
      return out;
    },
    sortBy: function (docs, f) { return docs.slice().sort(function (a, b) { var x = f(a), y = f(b); return x < y ? -1 : x > y ? 1 : 0; }); },
    sortByDescending: function (docs, f) { return docs.slice().sort(function (a, b) { var x = f(a), y = f(b); return x < y ? 1 : x > y ? -1 : 0; }); }
  };
  // Without a callback, the result goes to the end of the response's
  // body, as the service's default callback puts it.
  function finish(result, options, callback) {
    if (typeof options === "function") { callback = options; }
    if (callback) { callback(undefined, result, {}); } else { sh.response.appendBody(JSON.stringify(result)); }
    return { isAccepted: true };
  }
  function bad(message) { var e = new Error(message); e.number = 400; return e; }
  var notAccepted = { isAccepted: false };
  Object.keys(steps).forEach(function (name) {
    // unwind takes two selectors; the others one argument.
    var two = name === "unwind";
    sh[name] = function (a, b, options, callback) {
      if (!two) { callback = options; options = b; b = undefined; }
      var docs = all();
      return docs === null ? notAccepted : finish(steps[name](docs, a, b), options, callback);
    };
  });
  sh.value = function (options, callback) {
    var docs = all();
    return docs === null ? notAccepted : finish(docs, options, callback);
  };
  sh.chain = function () {
    var ops = [];
    var chain = {
      value: function (options, callback) {
        var docs = all();
        if (docs === null) { return notAccepted; }
        ops.forEach(function (op) { docs = steps[op.name](docs, op.a, op.b); });
        return finish(docs, options, callback);
      }
    };
    Object.keys(steps).forEach(function (name) {
      chain[name] = function (a, b) { ops.push({ name: name, a: a, b: b }); return chain; };
    });
    return chain;
  };
  return sh;
})`

// byKey makes getValue(key) and setValue(key, value) of a request or a
// response from its getBody or setBody: "Body" is the one value either
// names. getValue of another key is undefined; setValue of one is a
// TypeError, as appendValue's is.
func byKey(vm *goja.Runtime, body func(goja.FunctionCall) goja.Value) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		isSet := len(c.Arguments) > 1
		if !strings.EqualFold(c.Argument(0).String(), "body") {
			if isSet {
				panic(vm.NewTypeError("setValue can only set 'Body'"))
			}
			return goja.Undefined()
		}
		return body(goja.FunctionCall{This: c.This, Arguments: c.Arguments[min(1, len(c.Arguments)):]})
	}
}

// finish records the response body as JSON once the script returns.
func (x *execution) finishBody() error {
	if x.body == nil || goja.IsUndefined(x.body) {
		return nil
	}
	s, err := x.guards.bounded(goja.Undefined(), x.body, x.vm.ToValue(maxBodyBytes))
	if err == nil && goja.IsUndefined(s) {
		err = errors.New("undefined")
	}
	if err != nil {
		return &ScriptError{Message: "the response body cannot be serialized: " + err.Error()}
	}
	b := []byte(s.String())
	if s.ExportType() != reflectString || len(b) > maxBodyBytes {
		// A body set within the bound and grown after: the script's
		// failure, as if setBody had thrown.
		return &ScriptError{Message: bodyTooLarge().Message}
	}
	x.res.Body = b
	return nil
}

var errorCodes = []struct {
	name   string
	status int
}{
	{"BadRequest", 400}, {"Forbidden", 403}, {"NotFound", 404}, {"Conflict", 409},
	{"PreconditionFailed", 412}, {"RequestEntityTooLarge", 413}, {"RetryWith", 449},
	{"InternalServerError", 500},
}

// maxBodyBytes bounds a script's response body, as the service bounds a
// response: setBody and appendBody throw past it, an error the script
// may catch (and answer with less, and a continuation of its own).
const maxBodyBytes = 4 << 20

var reflectString = reflect.TypeOf("")

func bodyTooLarge() *Error {
	return &Error{Status: 413, Message: `Resulting message would be too large because of "Body". Return from the script with what fits, and a continuation to call it again with.`}
}

// accept counts a document operation against the budget; false means the
// operation is not accepted and must do nothing.
func (x *execution) accept() bool {
	if x.ops >= x.lim.Operations {
		return false
	}
	if x.lim.Charge > 0 && x.lim.Spent != nil && x.lim.Spent() >= x.lim.Charge {
		return false
	}
	x.ops++
	return true
}

// callback returns the last function among args, from index from on.
func callback(args []goja.Value, from int) goja.Callable {
	for i := len(args) - 1; i >= from; i-- {
		if fn, ok := goja.AssertFunction(args[i]); ok {
			return fn
		}
	}
	return nil
}

// options returns the options object at index i, if there is one.
func (x *execution) options(args []goja.Value, i int) *goja.Object {
	if i < len(args) {
		if o, ok := args[i].(*goja.Object); ok {
			if _, isFn := goja.AssertFunction(o); !isFn {
				return o
			}
		}
	}
	return nil
}

// settle delivers an operation's outcome: to the callback when there is
// one, as the service calls it (err, result, responseOptions); without
// one, a caller's error is thrown. An engine error ends the execution.
func (x *execution) settle(cb goja.Callable, err error, result goja.Value, respOpts goja.Value) goja.Value {
	var se *Error
	switch {
	case err != nil && !errors.As(err, &se):
		x.failed = err
		panic(x.vm.NewGoError(err))
	case err != nil:
		e := x.scriptError(se)
		if cb == nil {
			panic(e)
		}
		x.callBack(func() (goja.Value, error) { return cb(goja.Undefined(), e) })
	case cb != nil:
		if respOpts == nil {
			respOpts = x.vm.NewObject()
		}
		x.callBack(func() (goja.Value, error) { return cb(goja.Undefined(), goja.Undefined(), result, respOpts) })
	}
	return x.vm.ToValue(true)
}

// scriptError is the error object a script sees for se: its number is
// the status, as the server-side API gives it.
func (x *execution) scriptError(se *Error) *goja.Object {
	e := x.vm.NewObject()
	_ = e.Set("number", se.Status)
	_ = e.Set("body", se.Message)
	_ = e.Set("message", se.Message)
	return e
}

// callBack runs an operation's callback. A call made from the script's own
// code runs it at once; one made from inside a callback runs it once that
// callback has returned, as the service runs callbacks after the calls
// that queued them. A chain of operations each called from the last one's
// callback (the service's BulkImport sample) then runs one callback after
// another rather than one inside another, and does not run out of stack.
func (x *execution) callBack(f func() (goja.Value, error)) {
	run := func() {
		if _, err := f(); err != nil {
			panic(err)
		}
	}
	if x.calling {
		x.queued = append(x.queued, run)
		return
	}
	x.calling = true
	defer func() { x.calling = false }()
	run()
	for len(x.queued) > 0 {
		next := x.queued[0]
		x.queued = x.queued[1:]
		next()
	}
}

func (x *execution) write(c goja.FunctionCall, upsert bool) goja.Value {
	cb := callback(c.Arguments, 2)
	if !x.accept() {
		return x.vm.ToValue(false)
	}
	if err := x.ownCollection(c.Argument(0)); err != nil {
		return x.settle(cb, err, goja.Undefined(), nil)
	}
	doc, err := x.document(c.Argument(1))
	if err != nil {
		panic(x.vm.NewTypeError("the document cannot be serialized: %v", err))
	}
	if o := x.options(c.Arguments, 2); o != nil && o.Get("disableAutomaticIdGeneration") != nil && o.Get("disableAutomaticIdGeneration").ToBoolean() && !hasID(doc) {
		// Told not to name it, the service sends the document without
		// an id, which is refused.
		return x.settle(cb, &Error{Status: 400, Message: "The input content is invalid because the required properties - 'id; ' - are missing"}, goja.Undefined(), nil)
	}
	out, err := x.coll.Create(doc, upsert)
	return x.settle(cb, err, x.fromJSON(out), nil)
}

// hasID reports whether a document's JSON has an id that is not null or
// empty, which createDocument would otherwise name with a new GUID.
func hasID(doc []byte) bool {
	var d struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(doc, &d) != nil {
		return true // the store refuses it, with its own message
	}
	return d.ID != nil && d.ID != ""
}

// ownCollection checks that a collection link a script passes is its own
// collection's, by self link or by name: a script works on its own
// collection only, and a link to another is an error it can catch, not
// a write or read of its own collection.
func (x *execution) ownCollection(link goja.Value) error {
	l := strings.Trim(link.String(), "/")
	if l == strings.Trim(x.coll.SelfLink(), "/") || l == strings.Trim(x.coll.AltLink(), "/") {
		return nil
	}
	return &Error{Status: 400, Message: fmt.Sprintf("'%s' is not the link of the script's collection (%s or %s).", link.String(), x.coll.AltLink(), x.coll.SelfLink())}
}

func (x *execution) replace(c goja.FunctionCall) goja.Value {
	cb := callback(c.Arguments, 2)
	if !x.accept() {
		return x.vm.ToValue(false)
	}
	doc, err := x.document(c.Argument(1))
	if err != nil {
		panic(x.vm.NewTypeError("the document cannot be serialized: %v", err))
	}
	out, err := x.coll.Replace(c.Argument(0).String(), doc, x.etag(c.Arguments, 2))
	return x.settle(cb, err, x.fromJSON(out), nil)
}

func (x *execution) read(c goja.FunctionCall) goja.Value {
	cb := callback(c.Arguments, 1)
	if !x.accept() {
		return x.vm.ToValue(false)
	}
	out, err := x.coll.Read(c.Argument(0).String())
	return x.settle(cb, err, x.fromJSON(out), nil)
}

func (x *execution) remove(c goja.FunctionCall) goja.Value {
	cb := callback(c.Arguments, 1)
	if !x.accept() {
		return x.vm.ToValue(false)
	}
	err := x.coll.Delete(c.Argument(0).String(), x.etag(c.Arguments, 1))
	// The service calls back with (undefined, the response's options).
	return x.settle(cb, err, x.vm.NewObject(), nil)
}

// etag is the options' etag, or their accessCondition {type: "IfMatch",
// condition}.
func (x *execution) etag(args []goja.Value, i int) string {
	o := x.options(args, i)
	if o == nil {
		return ""
	}
	// The server-side API's own option is etag; accessCondition is the
	// client SDKs' shape, which scripts written for them use.
	if v := o.Get("etag"); v != nil && !goja.IsUndefined(v) && !goja.IsNull(v) && v.String() != "" {
		return v.String()
	}
	ac, ok := o.Get("accessCondition").(*goja.Object)
	if !ok {
		return ""
	}
	if t := ac.Get("type"); t != nil && t.String() != "IfMatch" {
		return ""
	}
	if cond := ac.Get("condition"); cond != nil && !goja.IsUndefined(cond) {
		return cond.String()
	}
	return ""
}

// query runs queryDocuments(link, query, [options], [callback]); the query
// is a string or {query, parameters: [{name, value}]}.
func (x *execution) query(c goja.FunctionCall) goja.Value {
	cb := callback(c.Arguments, 2)
	if !x.accept() {
		return x.vm.ToValue(false)
	}
	if err := x.ownCollection(c.Argument(0)); err != nil {
		return x.settle(cb, err, goja.Undefined(), nil)
	}
	var text string
	params := map[string]any{}
	switch q := c.Argument(1).(type) {
	case *goja.Object:
		if _, isFn := goja.AssertFunction(q); isFn {
			panic(x.vm.NewTypeError("queryDocuments needs a query"))
		}
		text = q.Get("query").String()
		if ps, ok := q.Get("parameters").(*goja.Object); ok {
			b, err := x.toJSON(ps)
			if err != nil {
				panic(x.vm.NewTypeError("the query parameters cannot be serialized: %v", err))
			}
			var list []struct {
				Name  string `json:"name"`
				Value any    `json:"value"`
			}
			if err := json.Unmarshal(b, &list); err != nil {
				panic(x.vm.NewTypeError("the query parameters must be [{name, value}]"))
			}
			for _, p := range list {
				params[p.Name] = p.Value
			}
		}
	default:
		text = q.String()
	}
	pageSize, continuation := 100, ""
	if o := x.options(c.Arguments, 2); o != nil {
		if v := o.Get("pageSize"); v != nil && !goja.IsUndefined(v) {
			if n := int(v.ToInteger()); n > 0 {
				pageSize = n
			} else if n == -1 {
				pageSize = 1000
			}
		}
		if v := o.Get("continuation"); v != nil && !goja.IsUndefined(v) && !goja.IsNull(v) {
			continuation = v.String()
		}
	}
	docs, next, err := x.coll.Query(text, params, pageSize, continuation)
	var result goja.Value = goja.Undefined()
	respOpts := x.vm.NewObject()
	if err == nil {
		arr := make([]any, len(docs))
		for i, d := range docs {
			arr[i] = x.fromJSON(d)
		}
		result = x.vm.NewArray(arr...)
		if next != "" {
			_ = respOpts.Set("continuation", next)
		}
	}
	return x.settle(cb, err, result, respOpts)
}

// readAll returns every document of the partition, read a page at a time
// as queryDocuments reads them, each page an operation of the budget: the
// documents __'s functions work on. It returns them at once, wherever __
// is called from, where a query's callback may wait for the callback
// that made the query (callBack).
func (x *execution) readAll(goja.FunctionCall) goja.Value {
	var all []any
	cont := ""
	for {
		if !x.accept() {
			// Not accepted: __'s function answers {isAccepted: false},
			// as every operation past the budget does.
			return goja.Null()
		}
		docs, next, err := x.coll.Query("SELECT * FROM root r", nil, 1000, cont)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				x.failed = err
			}
			panic(x.vm.NewGoError(err))
		}
		for _, d := range docs {
			all = append(all, x.fromJSON(d))
		}
		if next == "" {
			return x.vm.NewArray(all...)
		}
		cont = next
	}
}

// document is the JSON of a document a script writes: an object, or a
// string holding one's JSON, as the server-side API takes either.
func (x *execution) document(v goja.Value) ([]byte, error) {
	if s, ok := v.Export().(string); ok {
		return []byte(s), nil
	}
	return x.toJSON(v)
}

// toJSON serializes a script value with the script's own JSON.stringify.
func (x *execution) toJSON(v goja.Value) ([]byte, error) {
	s, err := x.guards.stringify(goja.Undefined(), v)
	if err != nil {
		return nil, err
	}
	if goja.IsUndefined(s) {
		return nil, errors.New("undefined")
	}
	return []byte(s.String()), nil
}

// fromJSON parses a document for the script.
func (x *execution) fromJSON(b []byte) goja.Value {
	if b == nil {
		return goja.Undefined()
	}
	v, err := x.guards.parse(goja.Undefined(), x.vm.ToValue(string(b)))
	if err != nil {
		panic(err)
	}
	return v
}

// fromJSONValue turns a decoded parameter into a script value.
func (x *execution) fromJSONValue(v any) goja.Value {
	b, err := json.Marshal(v)
	if err != nil {
		return goja.Undefined()
	}
	return x.fromJSON(b)
}

// format renders the arguments of console.log as the service does: a first
// argument that is a string is a format in which %s, %d, %i, %f, %j, %o
// and %O take the next arguments in turn and %% is a percent sign; the
// arguments left follow, each after a space.
func (x *execution) format(args []goja.Value) string {
	var b strings.Builder
	rest := args
	if len(args) > 0 {
		if f, ok := args[0].Export().(string); ok {
			rest = args[1:]
			for i := 0; i < len(f); i++ {
				if f[i] != '%' || i+1 == len(f) {
					b.WriteByte(f[i])
					continue
				}
				verb := f[i+1]
				if verb == '%' {
					b.WriteByte('%')
					i++
					continue
				}
				if !strings.ContainsRune("sdifjoO", rune(verb)) || len(rest) == 0 {
					b.WriteByte('%')
					continue
				}
				a := rest[0]
				rest = rest[1:]
				i++
				switch verb {
				case 'd', 'f':
					b.WriteString(x.vm.ToValue(a.ToFloat()).String())
				case 'i':
					b.WriteString(x.vm.ToValue(math.Trunc(a.ToFloat())).String())
				default:
					b.WriteString(x.text(a))
				}
			}
		}
	}
	for i, a := range rest {
		if i > 0 || len(rest) < len(args) {
			b.WriteByte(' ')
		}
		b.WriteString(x.text(a))
	}
	return b.String()
}

// text renders a console.log argument: strings as they are, the rest as
// JSON.
func (x *execution) text(v goja.Value) string {
	if s, ok := v.Export().(string); ok {
		return s
	}
	if b, err := x.toJSON(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// interrupted is the error of a script stopped from outside: by its time
// limit, its request's end, or the memory guard (a RangeError the client
// is told of, as for a script that recursed too deep).
func interrupted(intr *goja.InterruptedError) error {
	e, ok := intr.Value().(error)
	switch {
	case !ok:
		return ErrTimeout
	case errors.Is(e, ErrMemory):
		return &ScriptError{Message: fmt.Sprintf("RangeError: the scripts running used more than %d MiB of memory", MemoryLimit>>20)}
	}
	return e
}
