// Command emulatorsuite runs the Go SDK's own emulator tests against a
// Mayfly listening on https://localhost:8081/.
//
// The tests are the emulator_*_test.go files of
// github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos at the version the
// project pins. Their module is downloaded with the go tool, copied to a
// writable directory, compiled once into a test binary, and each test is
// run on its own with EMULATOR=1.
//
// A list file (integration/emulator-suite.txt) says what to expect of every
// test: "pass" tests must pass, and the run fails if one does not; "xfail"
// tests are run and reported, and one that passes is announced so the list
// can be tightened. The list must name every test in those files, and only
// those, so a new SDK version cannot add or drop a test unnoticed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.list, "list", "integration/emulator-suite.txt", "the list of tests and what to expect of each")
	flag.StringVar(&cfg.module, "module", "github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos@v1.5.0", "the module whose emulator tests to run")
	flag.StringVar(&cfg.workDir, "work", "", "directory for the module copy, binary and logs (default: a new temporary directory, removed afterwards)")
	flag.StringVar(&cfg.caFile, "ca-file", "", "PEM file the tests that use the default transport should trust (passed as SSL_CERT_FILE)")
	flag.StringVar(&cfg.run, "run", "", "run only tests matching this regular expression (the list is still checked in full)")
	flag.DurationVar(&cfg.passTimeout, "pass-timeout", 3*time.Minute, "time limit for each test expected to pass")
	flag.DurationVar(&cfg.xfailTimeout, "xfail-timeout", 45*time.Second, "time limit for each test expected to fail")
	flag.IntVar(&cfg.xfailParallel, "xfail-parallel", 2, "expected failures run this many at a time")
	flag.DurationVar(&cfg.xfailBudget, "xfail-budget", 5*time.Minute, "stop starting expected failures after this long, so that hanging ones cannot stretch the run")
	flag.BoolVar(&cfg.verbose, "v", false, "print the output of every test")
	flag.Parse()

	ok, err := run(context.Background(), cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "emulatorsuite:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

type config struct {
	list, module, workDir, caFile, run string
	passTimeout, xfailTimeout          time.Duration
	xfailBudget                        time.Duration
	xfailParallel                      int
	verbose                            bool
}

// expectation is one line of the list file.
type expectation struct {
	Name   string
	Pass   bool   // must pass; otherwise an expected failure
	Reason string // why it is expected to fail
	Line   int
}

// parseList reads the list file: one test a line, "<Name> pass" or
// "<Name> xfail <reason>"; blank lines and lines starting with # are
// ignored.
func parseList(r io.Reader) ([]expectation, error) {
	var out []expectation
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return nil, fmt.Errorf("line %d: want \"<Test> pass\" or \"<Test> xfail <reason>\", got %q", n, line)
		}
		e := expectation{Name: fields[0], Line: n}
		switch fields[1] {
		case "pass":
			if len(fields) > 2 {
				return nil, fmt.Errorf("line %d: text after \"pass\"", n)
			}
			e.Pass = true
		case "xfail":
			if len(fields) < 3 {
				return nil, fmt.Errorf("line %d: an expected failure needs a reason", n)
			}
			e.Reason = strings.Join(fields[2:], " ")
		default:
			return nil, fmt.Errorf("line %d: unknown expectation %q (want pass or xfail)", n, fields[1])
		}
		if prev, dup := seen[e.Name]; dup {
			return nil, fmt.Errorf("line %d: %s already listed on line %d", n, e.Name, prev)
		}
		seen[e.Name] = n
		out = append(out, e)
	}
	return out, sc.Err()
}

// findTests returns the top-level Test functions of the emulator_*_test.go
// files in dir, sorted.
func findTests(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "emulator_*_test.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no emulator_*_test.go files in %s", dir)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !isTestName(fn.Name.Name) {
				continue
			}
			if params := fn.Type.Params.List; len(params) == 1 {
				if star, ok := params[0].Type.(*ast.StarExpr); ok {
					if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "T" {
						names = append(names, fn.Name.Name)
					}
				}
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// isTestName follows go test: "Test" then nothing or a non-lowercase rune.
func isTestName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Test")
	return ok && (rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z'))
}

// compareList reports tests the list misses and entries naming no test.
func compareList(list []expectation, tests []string) []string {
	var problems []string
	listed := map[string]bool{}
	for _, e := range list {
		listed[e.Name] = true
		if !slices.Contains(tests, e.Name) {
			problems = append(problems, fmt.Sprintf("line %d lists %s, which is not a test in emulator_*_test.go", e.Line, e.Name))
		}
	}
	for _, name := range tests {
		if !listed[name] {
			problems = append(problems, fmt.Sprintf("%s is missing from the list; add it as pass or xfail <reason>", name))
		}
	}
	return problems
}

type outcome int

const (
	passed outcome = iota
	failed
	skipped
	timedOut
	notRun // the time budget ran out first
)

func (o outcome) String() string {
	return [...]string{"PASS", "FAIL", "SKIP", "TIMEOUT", "NOT RUN"}[o]
}

type result struct {
	exp      expectation
	outcome  outcome
	duration time.Duration
	output   []byte
	logFile  string
}

func run(ctx context.Context, cfg config, stdout io.Writer) (bool, error) {
	listFile, err := os.Open(cfg.list)
	if err != nil {
		return false, err
	}
	list, err := parseList(listFile)
	listFile.Close()
	if err != nil {
		return false, fmt.Errorf("%s: %w", cfg.list, err)
	}

	work := cfg.workDir
	if work == "" {
		if work, err = os.MkdirTemp("", "emulatorsuite-"); err != nil {
			return false, err
		}
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return false, err
	}
	work, err = filepath.Abs(work)
	if err != nil {
		return false, err
	}

	start := time.Now()
	src, err := downloadModule(ctx, cfg.module)
	if err != nil {
		return false, err
	}
	modDir := filepath.Join(work, "module")
	if err := os.RemoveAll(modDir); err != nil {
		return false, err
	}
	if err := copyTree(src, modDir); err != nil {
		return false, fmt.Errorf("copy %s: %w", src, err)
	}

	tests, err := findTests(modDir)
	if err != nil {
		return false, err
	}
	if problems := compareList(list, tests); len(problems) > 0 {
		fmt.Fprintf(stdout, "%s does not match the tests of %s:\n", cfg.list, cfg.module)
		for _, p := range problems {
			fmt.Fprintln(stdout, "  ", p)
		}
		return false, nil
	}

	bin := filepath.Join(work, "azcosmos.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, ".")
	build.Dir = modDir
	build.Env = goEnv()
	if out, err := build.CombinedOutput(); err != nil {
		return false, fmt.Errorf("compile the emulator tests: %v\n%s", err, out)
	}
	fmt.Fprintf(stdout, "emulator suite: %s, %d tests, prepared in %s\n", cfg.module, len(tests), time.Since(start).Round(time.Second))

	logDir := filepath.Join(work, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return false, err
	}
	var filter *regexp.Regexp
	if cfg.run != "" {
		if filter, err = regexp.Compile(cfg.run); err != nil {
			return false, fmt.Errorf("-run: %w", err)
		}
	}
	var mustPass, xfail []expectation
	for _, e := range list {
		if filter != nil && !filter.MatchString(e.Name) {
			continue
		}
		if e.Pass {
			mustPass = append(mustPass, e)
		} else {
			xfail = append(xfail, e)
		}
	}

	r := runner{bin: bin, dir: modDir, logDir: logDir, caFile: cfg.caFile}
	// Tests expected to pass run one at a time, so that a failure is not
	// the side effect of another test's load.
	var results []result
	for _, e := range mustPass {
		res := r.runTest(ctx, e, cfg.passTimeout)
		report(stdout, res, cfg.verbose)
		results = append(results, res)
	}
	for _, res := range r.runAll(ctx, xfail, cfg.xfailTimeout, max(cfg.xfailParallel, 1), time.Now().Add(cfg.xfailBudget)) {
		report(stdout, res, cfg.verbose)
		results = append(results, res)
	}
	return summarize(stdout, results, time.Since(start)), nil
}

func goEnv() []string {
	// The copy is a module of its own: ignore any workspace and flags meant
	// for Mayfly's module.
	return append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false")
}

func downloadModule(ctx context.Context, module string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &info); jsonErr != nil && err == nil {
		err = jsonErr
	}
	if err != nil || info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s\n%s", module, err, info.Error, stderr.Bytes())
	}
	return info.Dir, nil
}

// copyTree copies a read-only module directory, making everything
// writable by its owner so that the copy can be built and removed.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm()|0o200)
	})
}

type runner struct {
	bin, dir, logDir, caFile string
}

// runAll runs tests parallel at a time; tests not started by the deadline
// are reported as not run.
func (r runner) runAll(ctx context.Context, exps []expectation, timeout time.Duration, parallel int, deadline time.Time) []result {
	results := make([]result, len(exps))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, e := range exps {
		sem <- struct{}{}
		if time.Now().After(deadline) {
			<-sem
			results[i] = result{exp: e, outcome: notRun}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = r.runTest(ctx, e, timeout)
		}()
	}
	wg.Wait()
	return results
}

func (r runner) runTest(ctx context.Context, e expectation, timeout time.Duration) result {
	// The binary's own -test.timeout panics with a stack dump, which is
	// what one wants to read when a test hangs; the context is a backstop.
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin,
		"-test.run", "^"+e.Name+"$", "-test.count", "1", "-test.v",
		"-test.timeout", timeout.String())
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "EMULATOR=1")
	if r.caFile != "" {
		cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+r.caFile)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	res := result{exp: e, duration: time.Since(start), output: out, logFile: filepath.Join(r.logDir, e.Name+".log")}
	_ = os.WriteFile(res.logFile, out, 0o644)
	switch {
	case bytes.Contains(out, []byte("panic: test timed out")) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.outcome = timedOut
	case err != nil:
		res.outcome = failed
	case bytes.Contains(out, []byte("--- PASS: "+e.Name+" ")):
		res.outcome = passed
	case bytes.Contains(out, []byte("--- SKIP: "+e.Name+" ")):
		res.outcome = skipped
	default:
		res.outcome = failed // ran nothing: the name did not match
	}
	return res
}

var testLine = regexp.MustCompile(`^\S+_test\.go:\d+:( |$)`)

// firstFailure summarizes the first failure in a test's output on one line:
// the first assertion, error or panic, plus what follows it that says most
// (for an SDK error, the response status and the server's message).
func firstFailure(out []byte) string {
	lines := strings.Split(string(out), "\n")
	where := "" // a testify failure starts with a bare "file_test.go:NN:" line
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if testLine.MatchString(line) && strings.HasSuffix(line, ":") {
			where = line + " "
			continue
		}
		if !strings.HasPrefix(line, "panic:") && !strings.HasPrefix(line, "Error:") && !testLine.MatchString(line) {
			continue
		}
		parts := []string{where + strings.Join(strings.Fields(line), " ")}
		for n, next := range lines[i+1 : min(i+20, len(lines))] {
			next = strings.TrimSpace(next)
			if testLine.MatchString(next) || strings.HasPrefix(next, "--- ") || strings.HasPrefix(next, "Error:") ||
				strings.HasPrefix(next, "Test:") || strings.HasPrefix(next, "Messages:") {
				break
			}
			if (n == 0 && strings.HasSuffix(parts[0], ":")) || strings.HasPrefix(next, "RESPONSE ") ||
				strings.HasPrefix(next, `"message"`) {
				parts = append(parts, strings.Join(strings.Fields(next), " "))
			}
		}
		summary := strings.Join(parts, " ")
		if len(summary) > 300 {
			summary = summary[:300] + "…"
		}
		return summary
	}
	return ""
}

func report(w io.Writer, res result, verbose bool) {
	kind := "pass "
	if !res.exp.Pass {
		kind = "xfail"
	}
	fmt.Fprintf(w, "%-7s %s %-58s %6.1fs", res.outcome, kind, res.exp.Name, res.duration.Seconds())
	if res.outcome != passed {
		if why := firstFailure(res.output); why != "" {
			fmt.Fprintf(w, "  %s", why)
		}
	}
	fmt.Fprintln(w)
	if verbose || (res.exp.Pass && res.outcome != passed) {
		fmt.Fprintf(w, "----- output of %s (%s) -----\n%s", res.exp.Name, res.logFile, tail(res.output, 80))
		fmt.Fprintf(w, "----- end of %s -----\n", res.exp.Name)
	}
}

func tail(out []byte, lines int) []byte {
	out = bytes.TrimRight(out, "\n")
	i := len(out)
	for n := 0; n < lines && i > 0; n++ {
		i = bytes.LastIndexByte(out[:i], '\n')
		if i < 0 {
			return append(out, '\n')
		}
	}
	return append(append([]byte("…\n"), out[i+1:]...), '\n')
}

// summarize prints the totals and returns whether every must-pass test
// passed.
func summarize(w io.Writer, results []result, elapsed time.Duration) bool {
	var mustFail, nowPass []result
	var npass, nxfail, nnotRun int
	for _, res := range results {
		switch {
		case res.outcome == notRun:
			nnotRun++
		case res.exp.Pass && res.outcome == passed:
			npass++
		case res.exp.Pass:
			mustFail = append(mustFail, res)
		case res.outcome == passed:
			nowPass = append(nowPass, res)
		default:
			nxfail++
		}
	}
	fmt.Fprintf(w, "\nemulator suite: %d of %d must-pass tests passed; %d expected failures; %d expected failures now pass; %s\n",
		npass, npass+len(mustFail), nxfail, len(nowPass), elapsed.Round(time.Second))
	if nnotRun > 0 {
		fmt.Fprintf(w, "  %d expected failures not run: the -xfail-budget ran out\n", nnotRun)
	}
	for _, res := range nowPass {
		fmt.Fprintf(w, "  now passes: %s (listed as xfail: %s); consider marking it pass\n", res.exp.Name, res.exp.Reason)
	}
	for _, res := range mustFail {
		fmt.Fprintf(w, "  MUST PASS but %s: %s (log: %s)\n", res.outcome, res.exp.Name, res.logFile)
	}
	return len(mustFail) == 0
}
