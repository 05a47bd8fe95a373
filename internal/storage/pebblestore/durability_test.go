package pebblestore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// childEnv names the directory the child process writes to; the child
// test does nothing unless it is set.
const childEnv = "MAYFLY_STORAGE_CHILD"

// TestDurabilityChild is the writer half of TestDurability, run in a
// process of its own. Several goroutines commit Updates in a loop; each
// writes a key and its mirror, and prints "ack <key>" once Update returns.
func TestDurabilityChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestDurability")
	}
	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	// The parent kills us; the deadline only bounds an orphaned child.
	deadline := time.Now().Add(30 * time.Second)
	for w := range 8 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				key := fmt.Sprintf("w%02d/%08d", w, i)
				err := s.Update(context.Background(), func(tx storage.Txn) error {
					if err := tx.Set([]byte(key), []byte("v-"+key)); err != nil {
						return err
					}
					return tx.Set([]byte("mirror/"+key), []byte("v-"+key))
				})
				out.Lock()
				if err != nil {
					fmt.Printf("error %v\n", err)
				} else {
					fmt.Printf("ack %s\n", key)
				}
				out.Unlock()
			}
		})
	}
	wg.Wait()
	os.Exit(0)
}

// TestDurability kills a writing process with SIGKILL and checks that every
// Update it acknowledged survived, whole.
func TestDurability(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("this is the child")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDurabilityChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	lines := make(chan string)
	go func() {
		defer close(lines)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				// A line cut short by the kill was never acknowledged.
				if !errors.Is(err, io.EOF) {
					t.Errorf("read child output: %v", err)
				}
				return
			}
			lines <- strings.TrimSuffix(line, "\n")
		}
	}()

	var acked []string
	take := func(line string) {
		switch {
		case strings.HasPrefix(line, "ack "):
			acked = append(acked, strings.TrimPrefix(line, "ack "))
		case strings.HasPrefix(line, "error "):
			t.Errorf("child: %s", line)
		}
	}

	// Let the child get going, then kill it mid-write.
	var kill <-chan time.Time
	timeout := time.After(60 * time.Second)
collect:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break collect
			}
			take(line)
			if kill == nil && len(acked) > 0 {
				kill = time.After(700 * time.Millisecond)
			}
		case <-kill:
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("kill child: %v", err)
			}
			killed = true
			kill = nil
		case <-timeout:
			t.Fatal("the child acknowledged nothing in time")
		}
	}
	if !killed {
		t.Fatal("the child exited before it was killed")
	}
	_ = cmd.Wait()
	if len(acked) == 0 {
		t.Fatal("no acknowledged writes")
	}

	s, err := pebblestore.Open(pebblestore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	err = s.View(context.Background(), func(r storage.Reader) error {
		for _, key := range acked {
			for _, k := range []string{key, "mirror/" + key} {
				v, err := r.Get([]byte(k))
				if err != nil {
					t.Errorf("acknowledged key %q: %v", k, err)
					continue
				}
				if string(v) != "v-"+key {
					t.Errorf("acknowledged key %q = %q, want %q", k, v, "v-"+key)
				}
			}
		}
		// Writes that were not acknowledged may or may not be there, but
		// never half of one.
		it, err := r.NewIter(storage.IterParams{Lower: []byte("w"), Upper: []byte("x")})
		if err != nil {
			return err
		}
		defer it.Close()
		found := 0
		for ok := it.First(); ok; ok = it.Next() {
			found++
			if _, err := r.Get(append([]byte("mirror/"), it.Key()...)); err != nil {
				t.Errorf("key %q survived without its mirror: %v", it.Key(), err)
			}
		}
		t.Logf("%d writes acknowledged, %d survived", len(acked), found)
		return it.Err()
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
}
