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

// nesting is the deepest nesting of (, [ and { in s, counted with no
// regard for strings or comments: it only needs to bound the parser's
// recursion, which such text can never exceed.
func nesting(s string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
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
// that each first checks the nesting of the strings it is given, and
// throws a RangeError the script can catch instead of parsing them.
func guardParsers(vm *goja.Runtime) error {
	newRangeError, ok := goja.AssertConstructor(vm.Get("RangeError"))
	if !ok {
		return errors.New("script: the engine has no RangeError")
	}
	if err := vm.Set("__mayflyCheckNesting", func(c goja.FunctionCall) goja.Value {
		for _, a := range c.Arguments {
			if s, ok := a.Export().(string); ok && nesting(s) > maxNesting {
				e, err := newRangeError(nil, vm.ToValue(errTooNested))
				if err != nil {
					panic(err)
				}
				panic(e)
			}
		}
		return goja.Undefined()
	}); err != nil {
		return err
	}
	_, err := vm.RunProgram(guardProgram)
	return err
}

var guardProgram = goja.MustCompile("guard", `(function (check) {
  delete globalThis.__mayflyCheckNesting;
  var parse = JSON.parse;
  JSON.parse = function parse_(text, reviver) { check(text); return parse.call(JSON, text, reviver); };
  // JSON.stringify recurses too, and takes time that grows with the
  // square of the depth while no time limit can stop it: values nested
  // deeper than the bound are refused as it meets them.
  var stringify = JSON.stringify;
  JSON.stringify = function stringify_(value, replacer, space) {
    var depths = new WeakMap();
    var allow = Array.isArray(replacer) ? replacer.map(String) : null;
    var user = typeof replacer === "function" ? replacer : null;
    var track = function (key, v) {
      if (allow !== null && key !== "" && !Array.isArray(this) && allow.indexOf(key) < 0) {
        return undefined;
      }
      if (user !== null) {
        v = user.call(this, key, v);
      }
      if (v !== null && typeof v === "object") {
        var d = (depths.get(this) || 0) + 1;
        if (d > 10000) {
          throw new RangeError("the value nests deeper than a script may serialize (10000 levels)");
        }
        depths.set(v, d);
      }
      return v;
    };
    return stringify.call(JSON, value, track, space);
  };
  var evaluate = eval;
  globalThis.eval = function (x) { check(x); return evaluate(x); };
  function wrap(C) {
    var W = function () {
      check.apply(null, arguments);
      return Reflect.construct(C, Array.prototype.slice.call(arguments), new.target || C);
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
