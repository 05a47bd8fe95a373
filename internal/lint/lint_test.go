package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mayfly-db/mayfly"

// domainPackages are the packages that hold Mayfly's rules. They must stay
// free of transports and storage drivers (style.md, habit 1), directly or
// through anything they import. A trailing "/..." includes sub-packages.
var domainPackages = []string{
	"internal/engine",
	"internal/query/...",
	"internal/ttl",
	"internal/document",
	"internal/partition",
	"internal/auth",
	"internal/clock",
	"internal/ratelimit",
}

// forbiddenImports are the edges the domain must not reach. A trailing "/"
// forbids the path and everything under it.
var forbiddenImports = []string{
	"net/http",
	"net/http/",
	"github.com/cockroachdb/pebble",
	"github.com/cockroachdb/pebble/",
	"github.com/jackc/pgx",
	"github.com/jackc/pgx/",
}

// bannedNames say nothing about what a package holds (style.md, habit 7).
var bannedNames = []string{"util", "utils", "common", "helper", "helpers", "model", "models", "misc"}

// repoRoot is the directory holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside the module")
	}
	return filepath.Dir(gomod)
}

// goCmd runs the go tool in the repository root and returns its stdout.
func goCmd(t *testing.T, root string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// skipDir reports directories the go tool ignores, plus dependencies
// installed by other tool chains.
func skipDir(name string) bool {
	return name == "testdata" || name == "node_modules" ||
		strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// TestGofmt is `gofmt -l .` on the repository: every Go file must be
// formatted.
func TestGofmt(t *testing.T) {
	root := repoRoot(t)
	var unformatted []string
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
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		formatted, err := format.Source(src)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		if !bytes.Equal(src, formatted) {
			unformatted = append(unformatted, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unformatted) > 0 {
		t.Errorf("files not formatted (run gofmt -w on them):\n\t%s", strings.Join(unformatted, "\n\t"))
	}
}

// TestGoVet runs go vet on every package.
func TestGoVet(t *testing.T) {
	if testing.Short() {
		t.Skip("go vet compiles every package")
	}
	root := repoRoot(t)
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go vet ./...: %v\n%s", err, out)
	}
}

// listedPackage is the part of `go list -json` output the checks read.
type listedPackage struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	Imports    []string
	Error      *struct{ Err string }
}

func goList(t *testing.T, root string, args ...string) []listedPackage {
	t.Helper()
	out := goCmd(t, root, append([]string{"list", "-e", "-json=ImportPath,Name,Dir,Standard,Imports,Error"}, args...)...)
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func forbidden(importPath string) bool {
	for _, f := range forbiddenImports {
		if importPath == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(importPath, f)) {
			return true
		}
	}
	return false
}

// TestImportDirection checks that no domain package reaches net/http,
// Pebble or pgx, directly or transitively. Packages not written yet are
// skipped.
func TestImportDirection(t *testing.T) {
	root := repoRoot(t)
	for _, v := range importViolations(t, root) {
		t.Error(v)
	}
}

// TestImportDirectionCatches runs the import check on a throwaway module
// whose engine reaches net/http through another package.
func TestImportDirectionCatches(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                    "module " + module + "\n\ngo 1.22\n",
		"internal/engine/engine.go": "package engine\n\nimport _ \"" + module + "/internal/transport\"\n",
		"internal/transport/t.go":   "package transport\n\nimport _ \"net/http\"\n",
		"internal/clock/clock.go":   "package clock\n\nimport _ \"time\"\n",
	}
	writeFiles(t, root, files)
	got := importViolations(t, root)
	if len(got) != 1 || !strings.Contains(got[0], "internal/engine must not import net/http") ||
		!strings.Contains(got[0], "internal/transport") {
		t.Errorf("violations = %q, want one naming engine → transport → net/http", got)
	}
}

func importViolations(t *testing.T, root string) []string {
	t.Helper()
	var patterns []string
	for _, p := range domainPackages {
		dir := strings.TrimSuffix(p, "/...")
		if _, err := os.Stat(filepath.Join(root, dir)); errors.Is(err, fs.ErrNotExist) {
			t.Logf("skipping %s: does not exist yet", p)
			continue
		}
		patterns = append(patterns, "./"+p)
	}
	if len(patterns) == 0 {
		return nil
	}

	// The domain packages themselves, then everything they depend on.
	roots := goList(t, root, patterns...)
	graph := map[string][]string{}
	var violations []string
	for _, p := range goList(t, root, append([]string{"-deps"}, patterns...)...) {
		graph[p.ImportPath] = p.Imports
		if p.Error != nil && !strings.Contains(p.Error.Err, "no Go files") {
			violations = append(violations, p.ImportPath+": "+p.Error.Err)
		}
	}

	for _, r := range roots {
		if r.Name == "" { // a directory with no Go files yet
			continue
		}
		// Breadth-first, keeping the first path found to each package so
		// the failure names the import chain to fix.
		via := map[string]string{r.ImportPath: ""}
		queue := []string{r.ImportPath}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, imp := range graph[p] {
				if _, seen := via[imp]; seen {
					continue
				}
				via[imp] = p
				if forbidden(imp) {
					chain := []string{imp}
					for q := p; q != ""; q = via[q] {
						chain = append(chain, q)
					}
					slices.Reverse(chain)
					violations = append(violations, fmt.Sprintf("%s must not import %s; chain:\n\t%s",
						strings.TrimPrefix(r.ImportPath, module+"/"), imp, strings.Join(chain, "\n\t→ ")))
					continue
				}
				queue = append(queue, imp)
			}
		}
	}
	return violations
}

// TestPackageNames enforces style.md habit 7 on every package in the
// module: no catch-all names, no underscores, at most two levels under
// internal/.
func TestPackageNames(t *testing.T) {
	root := repoRoot(t)
	for _, p := range goList(t, root, "./...") {
		rel := strings.TrimPrefix(p.ImportPath, module+"/")
		last := rel[strings.LastIndex(rel, "/")+1:]
		for _, name := range []string{p.Name, last} {
			if slices.Contains(bannedNames, name) {
				t.Errorf("%s: package name %q says nothing about what it holds", rel, name)
			}
		}
		if strings.Contains(p.Name, "_") && !strings.HasSuffix(p.Name, "_test") {
			t.Errorf("%s: package name %q has an underscore", rel, p.Name)
		}
		if strings.HasPrefix(rel, "internal/") && strings.Count(rel, "/") > 2 {
			t.Errorf("%s: more than two levels under internal/", rel)
		}
	}
}

// TestForbidden checks the matcher the import test relies on.
func TestForbidden(t *testing.T) {
	for path, want := range map[string]bool{
		"net/http":                               true,
		"net/http/httptest":                      true,
		"net/url":                                false,
		"net/httpx":                              false,
		"github.com/cockroachdb/pebble":          true,
		"github.com/cockroachdb/pebble/vfs":      true,
		"github.com/cockroachdb/pebblefoo":       false,
		"github.com/jackc/pgx/v5":                true,
		"github.com/jackc/pgx/v5/pgconn":         true,
		"github.com/mayfly-db/mayfly/internal/x": false,
	} {
		if got := forbidden(path); got != want {
			t.Errorf("forbidden(%q) = %v, want %v", path, got, want)
		}
	}
}

// writeFiles writes each named file under root, creating directories.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
