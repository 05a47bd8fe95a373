package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// patternRule forbids calls that undo a guarantee the code relies on.
type patternRule struct {
	name  string
	why   string
	match func(call *ast.CallExpr) bool
	// allowed lists the repository-relative files or directories (trailing
	// "/") where the call is the point.
	allowed []string
	// cmdToo extends the rule to cmd/; otherwise it covers internal/ only.
	cmdToo bool
}

var patternRules = []patternRule{
	{
		name: "time.Now",
		why:  "time-dependent logic takes the injectable clock (internal/clock), so tests can move time by hand",
		match: func(c *ast.CallExpr) bool {
			return isSelectorCall(c, "time", "Now") || isSelectorCall(c, "time", "Since") || isSelectorCall(c, "time", "Until")
		},
		allowed: []string{"internal/clock/"},
	},
	{
		name: "recover",
		why: "a panic is recovered in one place only, the HTTP handler, which logs it and answers 500 " +
			"(and the HTTP/2 server, which ends the stream of a handler that panicked, as net/http does); " +
			"anywhere else a recover hides a broken invariant and can leave a lock held",
		match: func(c *ast.CallExpr) bool {
			id, ok := c.Fun.(*ast.Ident)
			return ok && id.Name == "recover" && len(c.Args) == 0
		},
		// The storage conformance suite checks that a panic in a
		// transaction propagates, which takes a recover to observe.
		// Pebble panics in its commit pipeline once its write-ahead log
		// has failed; the Pebble store turns that one panic into an
		// error and stops writing (internal/storage/pebblestore/failure.go).
		// The HTTP/2 server stands in for net/http's, which recovers a
		// handler's panic and ends only its stream.
		allowed: []string{"internal/httpapi/api.go", "internal/h2/conn.go", "internal/storage/storagetest/", "internal/storage/pebblestore/failure.go"},
		cmdToo:  true,
	},
}

// isSelectorCall reports whether c calls pkg.name (by the package's
// default name; a renamed import is not followed).
func isSelectorCall(c *ast.CallExpr, pkg, name string) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// patternViolations returns the calls in dir's non-test Go files that a
// rule forbids, as "file:line: message".
func patternViolations(t *testing.T, root string, rules []patternRule) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			out = append(out, rel+": "+err.Error())
			return nil
		}
		for _, r := range rules {
			if !r.covers(rel) {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok && r.match(c) {
					out = append(out, fset.Position(c.Pos()).String()[len(root)+1:]+": "+r.name+"() here: "+r.why)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (r patternRule) covers(rel string) bool {
	if !strings.HasPrefix(rel, "internal/") && !(r.cmdToo && strings.HasPrefix(rel, "cmd/")) {
		return false
	}
	for _, a := range r.allowed {
		if rel == a || (strings.HasSuffix(a, "/") && strings.HasPrefix(rel, a)) {
			return false
		}
	}
	return true
}

// TestForbiddenPatterns checks that no Go file outside the allowed places
// calls time.Now (or Since/Until) or recover.
func TestForbiddenPatterns(t *testing.T) {
	for _, v := range patternViolations(t, repoRoot(t), patternRules) {
		t.Error(v)
	}
}

// TestForbiddenPatternsCatch shows the rules find what they forbid, so the
// test above cannot pass by matching nothing.
func TestForbiddenPatternsCatch(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"internal/x/x.go": `package x

import "time"

func f() (t time.Time) {
	defer func() { _ = recover() }()
	return time.Now()
}
`,
		"internal/clock/c.go":  "package clock\n\nimport \"time\"\n\nfunc now() time.Time { return time.Now() }\n",
		"internal/x/x_test.go": "package x\n\nimport \"time\"\n\nvar _ = time.Now()\n",
		"cmd/tool/main.go":     "package main\n\nimport \"time\"\n\nvar _ = time.Now()\n",
	})
	got := patternViolations(t, dir, patternRules)
	if len(got) != 2 || !strings.Contains(strings.Join(got, "\n"), "internal/x/x.go:6") ||
		!strings.Contains(strings.Join(got, "\n"), "internal/x/x.go:7") {
		t.Errorf("violations = %q, want recover at x.go:6 and time.Now at x.go:7 only", got)
	}
}

// TestStaticcheck runs staticcheck (pinned in go.mod as a tool) on every
// package.
func TestStaticcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("staticcheck compiles every package")
	}
	cmd := exec.Command("go", "tool", "staticcheck", "./...")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("staticcheck ./...: %v\n%s", err, out)
	}
}
