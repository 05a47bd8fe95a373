package main

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mayfly-db/mayfly/internal/transfer"
)

// TestExposureWarning runs the mayfly binary and reads its stderr up to the
// "ready" line: listening beyond loopback with the well-known key must be
// said there, in plain words as well as in the log.
func TestExposureWarning(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mayfly")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	own := base64.StdEncoding.EncodeToString([]byte("an account key nobody else knows"))
	for _, tt := range []struct {
		args []string
		warn bool
	}{
		{[]string{"--addr", "0.0.0.0:0"}, true},
		{[]string{"--addr", "0.0.0.0:0", "--key", own}, false},
		{[]string{"--addr", "localhost:0"}, false},
		{[]string{"--addr", "localhost:0", "--compute-addr", "0.0.0.0:0"}, true},
	} {
		args := append([]string{"--in-memory", "--no-tls", "--metrics-addr", "127.0.0.1:0"}, tt.args...)
		cmd := exec.Command(bin, args...)
		cmd.Env = cleanEnv()
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var plain, logged, ready bool
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "mayfly: WARNING: the API is reachable from other machines") {
				plain = true
			}
			if strings.Contains(line, `"level":"WARN","msg":"the API is reachable from other machines`) {
				logged = true
			}
			if strings.Contains(line, `"msg":"mayfly is ready"`) {
				ready = true
				break
			}
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if !ready {
			t.Errorf("%v: the server never said it was ready", tt.args)
		}
		if plain != tt.warn || logged != tt.warn {
			t.Errorf("%v: warned on stderr %v, in the log %v; want %v", tt.args, plain, logged, tt.warn)
		}
	}
}

// cleanEnv is the test's environment without MAYFLY_* settings, which
// would override the flags under test's defaults.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MAYFLY_") {
			env = append(env, kv)
		}
	}
	return env
}

// TestUnknownCommandServesNothing: a word that is not a flag or a command
// (a typo of one) is an error before any listener or data directory.
func TestUnknownCommandServesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{{"exprot"}, {"--in-memory", "--addr", "localhost:0", "bogus"}} {
		err := run(args)
		if err == nil || !strings.Contains(err.Error(), "unexpected argument") {
			t.Errorf("run(%q) = %v, want an unexpected argument", args, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("a refused command left %v behind", entries)
	}
}

// TestBadSettingsAreRefused: a value out of a flag's range, or an
// environment variable's value its flag would refuse, stops the command
// before anything is served or touched; and the commands read their
// flags' variables too.
func TestBadSettingsAreRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--in-memory", "--partitions", "0"}, "--partitions"},
		{nil, []string{"--in-memory", "--partitions", "65"}, "--partitions"},
		{nil, []string{"--in-memory", "--disk-reserve-mib", "-2"}, "--disk-reserve-mib"},
		{nil, []string{"--in-memory", "--disk-reserve-mib", "8796093022208"}, "--disk-reserve-mib"},
		{nil, []string{"--in-memory", "--cache-mib", "8796093022208"}, "--cache-mib"},
		{nil, []string{"--in-memory", "--memtable-mib", "4096"}, "--memtable-mib"},
		{nil, []string{"--in-memory", "--key", ""}, "--key"},
		{map[string]string{"MAYFLY_KEY": ""}, []string{"--in-memory"}, "--key"},
		{nil, []string{"--in-memory", "--read-only-key", ""}, "--read-only-key"},
		{nil, []string{"--in-memory", "--purge-ru-per-second", "NaN"}, "--purge-ru-per-second"},
		{nil, []string{"--in-memory", "--purge-ru-per-second", "-1"}, "--purge-ru-per-second"},
		{nil, []string{"--in-memory", "--request-timeout", "0s"}, "--request-timeout"},
		{nil, []string{"--in-memory", "--no-tls", "--cert", "c.pem", "--cert-key", "k.pem"}, "--no-tls"},
		{map[string]string{"MAYFLY_NO_TLS": "yes"}, []string{"--in-memory"}, "MAYFLY_NO_TLS"},
		{map[string]string{"MAYFLY_PARTITIONS": "abc"}, []string{"--in-memory"}, "MAYFLY_PARTITIONS"},
		{map[string]string{"MAYFLY_REQUEST_TIMEOUT": "30"}, []string{"--in-memory"}, "MAYFLY_REQUEST_TIMEOUT"},
		{nil, []string{"import", "--database", "db", "--rate", "-5"}, "--rate"},
		{map[string]string{"MAYFLY_RATE": "NaN"}, []string{"import", "--database", "db"}, "--rate"},
		{nil, []string{"export", "--database", "db", "--key", "a2V5", "--key-file", "k"}, "not both"},
		{nil, []string{"import", "--database", "db", "--key", ""}, "--key"},
		// check reads MAYFLY_DATA_DIR: here a directory that is not there.
		{map[string]string{"MAYFLY_DATA_DIR": filepath.Join(dir, "elsewhere")}, []string{"check"}, "elsewhere"},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want an error naming %s", tc.env, tc.args, err, tc.want)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("a refused command left %v behind", entries)
	}
}

// TestFailedExportLeavesNoFile: an export that fails (here, no server to
// answer) leaves no file behind, so it can be run again as it was.
func TestFailedExportLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	to := filepath.Join(dir, "dump.jsonl")
	for range 2 {
		err := run([]string{"export", "--database", "db", "--endpoint", "https://127.0.0.1:1/", "--insecure", "--to", to})
		if err == nil || strings.Contains(err.Error(), "exists") {
			t.Fatalf("export with no server: %v, want it to fail reaching the server", err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("a failed export left %v", entries)
	}
}

// An import stopped by a refusal the server would give again (a wrong
// key, a unique key's 409) is not told to run again; one stopped by a
// timeout, a throttle, a server error or the network is.
func TestImportRefusalsAreNotRetried(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("line 3: %w", &transfer.Error{Status: 401}), true},
		{fmt.Errorf("line 3: %w", &transfer.Error{Status: 409}), true},
		{&transfer.Error{Status: 408}, false},
		{&transfer.Error{Status: 429}, false},
		{&transfer.Error{Status: 503}, false},
		{errors.New("reach the server: connection refused"), false},
	} {
		if got := refused(tc.err); got != tc.want {
			t.Errorf("refused(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
