package engine

import (
	"os"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// With MAYFLY_TEST_STORE=postgres the engine's tests run over PostgreSQL
// (teststore).
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
