package script

import (
	"errors"
	"strings"

	"github.com/dop251/goja"
)

// maxNesting bounds how deeply brackets may nest in any text a script has
// parsed: its own source, and what it gives JSON.parse, eval and the
// function constructors. The engine parses nested brackets by recursion
// in Go, whose stack has a hard limit: JavaScript nested some 300,000
// deep, or JSON some millions deep, would end the process rather than
// the script. 10,000 is far beyond any real script or document (items
// nest at most 128 levels) and far below that limit.
const maxNesting = 10_000

// nesting is the deepest nesting of (, [ and { in s. In JSON the contents
// of strings do not count; in script source every bracket counts, which
// can only overstate the parser's recursion.
func nesting(s string, json bool) int {
	depth, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			if !json {
				continue
			}
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '(', '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ')', ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

// errTooNested is the message of a text refused for its nesting.
const errTooNested = "the text nests brackets deeper than a script may parse (10000 levels)"

// guards are a runtime's checks on the text it parses and the values it
// serializes (guardParsers), and the functions the engine converts its own
// data with.
type guards struct {
	// parse and stringify convert the engine's data, taken before any
	// script runs, so a script that replaces JSON's cannot change them:
	// the original parse (the engine's documents nest at most 128 levels)
	// and the guarded stringify (a script's values may nest deeper).
	parse, stringify goja.Callable
	// bounded is the guarded stringify with a bound on the text's bytes
	// (value, bound) → the text, or false once its strings alone pass
	// the bound, found before they are written out.
	bounded goja.Callable
	// wrap wraps the constructor of async functions ("async") or of
	// generators ("generator"). Making either costs a runtime a fifth of
	// an empty script's run, so each is wrapped only once some text to be
	// compiled could define such a function: one that holds "async" (the
	// engine refuses the keyword spelled with escapes) or "*".
	wrap             goja.Callable
	async, generator bool
	vm               *goja.Runtime
}

// compiling wraps what text could reach before it is compiled.
func (g *guards) compiling(text string) error {
	for _, c := range []struct {
		kind, mark string
		done       *bool
	}{{"async", "async", &g.async}, {"generator", "*", &g.generator}} {
		if *c.done || !strings.Contains(text, c.mark) {
			continue
		}
		if _, err := g.wrap(goja.Undefined(), g.vm.ToValue(c.kind)); err != nil {
			return err
		}
		*c.done = true
	}
	return nil
}

// guardParsers wraps JSON.parse, eval and the Function constructor so that
// each first checks the nesting of the text it is to parse, and throws a
// RangeError the script can catch instead of parsing it; JSON.stringify, so
// that it refuses values nested past the same depth; and, once text could
// define them (guards.compiling), the async and generator constructors
// alike. A wrapped eval is an indirect eval: it evaluates in the global
// scope.
func guardParsers(vm *goja.Runtime) (*guards, error) {
	g := &guards{vm: vm}
	json := vm.Get("JSON").ToObject(vm)
	g.parse, _ = goja.AssertFunction(json.Get("parse"))
	v, err := vm.RunProgram(guardProgram)
	if err != nil {
		return nil, err
	}
	install, _ := goja.AssertFunction(v)
	if g.parse == nil || install == nil {
		return nil, errors.New("script: the engine lacks JSON.parse")
	}
	check := func(c goja.FunctionCall) goja.Value {
		// (text, json): text is a string already, converted once by
		// the caller, which parses that same string.
		text, isJSON := c.Argument(0).String(), c.Argument(1).ToBoolean()
		if !isJSON {
			if err := g.compiling(text); err != nil {
				panic(err)
			}
		}
		return vm.ToValue(nesting(text, isJSON) > maxNesting)
	}
	installed, err := install(goja.Undefined(), vm.ToValue(check), vm.ToValue(errTooNested))
	if err != nil {
		return nil, err
	}
	fns := installed.ToObject(vm)
	g.wrap, _ = goja.AssertFunction(fns.Get("wrap"))
	g.bounded, _ = goja.AssertFunction(fns.Get("bounded"))
	g.stringify, _ = goja.AssertFunction(json.Get("stringify"))
	return g, nil
}

// guardProgram is a function of the nesting check, (text, json) → too
// deep, and of the message to refuse with, that installs the guards and
// returns {wrap, bounded}: the function that wraps the async or the
// generator constructor, and the bounded stringify.
var guardProgram = goja.MustCompile("guard", `(function (tooDeep, deep) {
  // RangeError is named when it is thrown, not before: taking it costs
  // the runtime its making, and a script that replaced it still cannot
  // have the text parsed.
  var check = function (s, json) {
    if (tooDeep(s, json)) {
      throw new RangeError(deep);
    }
  };
  var parse = JSON.parse;
  JSON.parse = function parse_(text, reviver) {
    var s = `+"`${text}`"+`;
    check(s, true);
    return parse.call(JSON, s, reviver);
  };
  // JSON.stringify recurses too, and takes time that grows with the
  // square of the depth while no time limit can stop it: values nested
  // deeper than the bound are refused as it meets them. A list of keys
  // is kept as the native one keeps it: its strings and numbers, once
  // each, read in its order, own or inherited.
  var stringify = JSON.stringify;
  var tooLarge = {};
  var serialize = function (value, replacer, space, bound) {
    var depths = new WeakMap();
    var total = 0;
    var user = typeof replacer === "function" ? replacer : null;
    var keys = null;
    if (Array.isArray(replacer)) {
      keys = [];
      for (var i = 0; i < replacer.length; i++) {
        var k = replacer[i];
        if (typeof k === "number" || k instanceof Number || k instanceof String) {
          k = String(k);
        } else if (typeof k !== "string") {
          continue;
        }
        if (keys.indexOf(k) < 0) {
          keys.push(k);
        }
      }
    }
    var track = function (key, v) {
      if (user !== null) {
        v = user.call(this, key, v);
      }
      if (bound > 0 && typeof v === "string") {
        // Each unit of a string takes at least a byte of the text, and
        // its quotes two more: strings past the bound are found before
        // they are written out.
        total += v.length + 2;
        if (total > bound) {
          throw tooLarge;
        }
      }
      if (v === null || typeof v !== "object") {
        return v;
      }
      var d = (depths.get(this) || 0) + 1;
      if (d > 10000) {
        throw new RangeError("the value nests deeper than a script may serialize (10000 levels)");
      }
      if (keys !== null && !Array.isArray(v) && !(v instanceof Number || v instanceof String || v instanceof Boolean)) {
        var only = {};
        for (var j = 0; j < keys.length; j++) {
          only[keys[j]] = v[keys[j]];
        }
        v = only;
      }
      depths.set(v, d);
      return v;
    };
    try {
      return stringify.call(JSON, value, track, space);
    } catch (e) {
      if (e === tooLarge) {
        return false;
      }
      throw e;
    }
  };
  JSON.stringify = function stringify_(value, replacer, space) {
    return serialize(value, replacer, space, 0);
  };
  // A native sort without a comparator compares strings in Go, where no
  // time limit reaches, so a few million items ran far past a script's
  // time: it is given the default comparator in JavaScript instead, which
  // the limit stops. (undefined values and holes never reach a comparator.)
  var nativeSort = Array.prototype.sort;
  var text = function (v) {
    if (typeof v === "symbol") {
      throw new TypeError("Cannot convert a Symbol value to a string");
    }
    return String(v);
  };
  var byString = function (x, y) {
    x = text(x);
    y = text(y);
    return x < y ? -1 : x > y ? 1 : 0;
  };
  Array.prototype.sort = function sort(compare) {
    return nativeSort.call(this, compare === undefined ? byString : compare);
  };
  // toLength is the language's ToLength of an array-like's length.
  var toLength = function (v) {
    return Math.min(Math.max(Math.trunc(Number(v)) || 0, 0), Number.MAX_SAFE_INTEGER);
  };
  // The native fill, too, runs where no time limit reaches, and grows an
  // array made with a length a step at a time: three million items took
  // 4.6 s, past any script's limit. The language's steps in JavaScript
  // took 2.0 s, and the limit stops them.
  var relative = function (v, len, otherwise) {
    if (v === undefined) {
      return otherwise;
    }
    var n = Math.trunc(Number(v)) || 0;
    return n < 0 ? Math.max(len + n, 0) : Math.min(n, len);
  };
  var fill = function fill(value) {
    var o = Object(this);
    var len = toLength(o.length);
    var end = relative(arguments[2], len, len);
    for (var k = relative(arguments[1], len, 0); k < end; k++) {
      o[k] = value;
    }
    return o;
  };
  Object.defineProperty(Array.prototype, "fill", { value: fill, writable: true, configurable: true, enumerable: false });
  // Array.from, native, took 23 s for an array of ten million items
  // under a 500 ms limit. Called on Array itself it takes the language's
  // steps in JavaScript here; a subclass's still goes to the native one.
  var nativeFrom = Array.from;
  var from = function from(items) {
    var map = arguments[1], self = arguments[2];
    if (this !== Array || items === null || items === undefined) {
      return nativeFrom.apply(this, arguments);
    }
    if (map !== undefined && typeof map !== "function") {
      throw new TypeError("Array.from: when provided, the second argument must be a function");
    }
    var out = [], k = 0;
    if (items[Symbol.iterator] != null) {
      for (var v of items) {
        out[k] = map === undefined ? v : map.call(self, v, k);
        k++;
      }
      return out;
    }
    var o = Object(items);
    var len = toLength(o.length);
    out.length = len;
    for (; k < len; k++) {
      out[k] = map === undefined ? o[k] : map.call(self, o[k], k);
    }
    return out;
  };
  Object.defineProperty(Array, "from", { value: from, writable: true, configurable: true, enumerable: false });
  var evaluate = eval;
  globalThis.eval = function (x) {
    if (typeof x !== "string") {
      return x;
    }
    check(x, false);
    return evaluate(x);
  };
  function wrap(C) {
    var W = function () {
      // The parameters and the body are parsed as one text.
      var args = [];
      for (var i = 0; i < arguments.length; i++) {
        args.push(`+"`${arguments[i]}`"+`);
      }
      check(args.join(","), false);
      return Reflect.construct(C, args, new.target || C);
    };
    W.prototype = C.prototype;
    Object.defineProperty(C.prototype, "constructor", { value: W, writable: true, configurable: true });
    return W;
  }
  globalThis.Function = wrap(Function);
  return {
    wrap: function (kind) {
      wrap(Object.getPrototypeOf(kind === "async" ? async function () {} : function* () {}).constructor);
    },
    bounded: function (value, bound) {
      return serialize(value, undefined, undefined, bound);
    }
  };
})`, false)
