package httpapi

import (
	"os"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// With MAYFLY_TEST_STORE=postgres the handler's tests and FuzzRequests run
// over PostgreSQL (teststore).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
