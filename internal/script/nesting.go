package script

import (
	"errors"

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

// guardParsers wraps JSON.parse, eval and the function constructors so
// that each first checks the nesting of the text it is to parse, and
// throws a RangeError the script can catch instead of parsing it; and
// JSON.stringify, so that it refuses values nested past the same depth. A
// wrapped eval is an indirect eval: it evaluates in the global scope.
//
// It returns the functions the engine converts its own data with, taken
// before any script runs, so a script that replaces JSON's cannot change
// them: the original parse (the engine's documents nest at most 128
// levels) and the guarded stringify (a script's values may nest deeper).
func guardParsers(vm *goja.Runtime) (parse, stringify goja.Callable, err error) {
	json := vm.Get("JSON").ToObject(vm)
	parse, _ = goja.AssertFunction(json.Get("parse"))
	newRangeError, ok := goja.AssertConstructor(vm.Get("RangeError"))
	if parse == nil || !ok {
		return nil, nil, errors.New("script: the engine lacks JSON.parse or RangeError")
	}
	if err := vm.Set("__mayflyCheckNesting", func(c goja.FunctionCall) goja.Value {
		// (text, json): text is a string already, converted once by
		// the caller, which parses that same string.
		if nesting(c.Argument(0).String(), c.Argument(1).ToBoolean()) > maxNesting {
			e, err := newRangeError(nil, vm.ToValue(errTooNested))
			if err != nil {
				panic(err)
			}
			panic(e)
		}
		return goja.Undefined()
	}); err != nil {
		return nil, nil, err
	}
	if _, err := vm.RunProgram(guardProgram); err != nil {
		return nil, nil, err
	}
	stringify, _ = goja.AssertFunction(json.Get("stringify"))
	return parse, stringify, nil
}

var guardProgram = goja.MustCompile("guard", `(function (check) {
  delete globalThis.__mayflyCheckNesting;
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
  JSON.stringify = function stringify_(value, replacer, space) {
    var depths = new WeakMap();
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
    return stringify.call(JSON, value, track, space);
  };
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
  [function () { return Object.getPrototypeOf(async function () {}).constructor; },
   function () { return Object.getPrototypeOf(function* () {}).constructor; }].forEach(function (get) {
    var C;
    try { C = get(); } catch (e) { return; }
    wrap(C);
  });
})(__mayflyCheckNesting);`, false)
