package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/auth"
)

// TestPageBodiesOverHTTP2: a page's documents are copied into reused
// blocks and its body rendered into a reused buffer, and each goes back
// for reuse only once done with: the blocks once the body is rendered,
// the buffer once the response writer has taken it. Over HTTP/2 a large
// body leaves in frames written by another goroutine as the client's
// flow-control window allows, so concurrent feeds of two partitions, each
// page larger than the window, show a buffer reused too early as a page
// with the other partition's documents or broken JSON, and blocks given
// back too early as a data race under -race.
func TestPageBodiesOverHTTP2(t *testing.T) {
	h := newTestHandler(t)
	const perPartition = 30
	for _, pk := range []string{"p", "q"} {
		pad := strings.Repeat(pk, 3000)
		for i := range perPartition {
			body := fmt.Sprintf(`{"id":"%s%d","pk":%q,"pad":%q}`, pk, i, pk, pad)
			if rec := serve(h, "POST", "/dbs/db/colls/c/docs", body, map[string]string{"x-ms-documentdb-partitionkey": `["` + pk + `"]`}); rec.Code != http.StatusCreated {
				t.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
		}
	}
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()
	key, _ := auth.DecodeKey(auth.EmulatorKey)

	readFeed := func(pk string) error {
		req, err := http.NewRequest("GET", srv.URL+"/dbs/db/colls/c/docs", nil)
		if err != nil {
			return err
		}
		date := auth.FormatDate(time.Now())
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", auth.MasterHeader("GET", "docs", "dbs/db/colls/c", date, key))
		req.Header.Set("x-ms-documentdb-partitionkey", `["`+pk+`"]`)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.ProtoMajor != 2 {
			return fmt.Errorf("HTTP/%d, want HTTP/2", resp.ProtoMajor)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		var page struct {
			Documents []struct{ PK, Pad string }
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return fmt.Errorf("partition %s: %v", pk, err)
		}
		if len(page.Documents) != perPartition {
			return fmt.Errorf("partition %s: %d documents, want %d", pk, len(page.Documents), perPartition)
		}
		for _, d := range page.Documents {
			if d.PK != pk || d.Pad != strings.Repeat(pk, 3000) {
				return fmt.Errorf("partition %s: a document of partition %q", pk, d.PK)
			}
		}
		return nil
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 15 {
				if err := readFeed([]string{"p", "q"}[(g+i)%2]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
