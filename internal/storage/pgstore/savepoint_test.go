package pgstore

import (
	"context"
	"errors"
	"testing"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// Once a statement of a transaction failed, PostgreSQL refuses the rest of
// it: RollbackTo must say so rather than let a group of writes go on
// towards a COMMIT that cannot succeed.
func TestRollbackToAfterAFailedStatement(t *testing.T) {
	s, err := Open(context.Background(), Options{URL: pgtest.URL(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	errStop := errors.New("stop")
	err = s.Update(context.Background(), func(tx storage.Txn) error {
		sp, ok := storage.Savepoint(tx)
		if !ok {
			t.Fatal("a pgstore transaction has no savepoints")
		}
		if err := tx.Set([]byte("k"), []byte("v")); err != nil {
			return err
		}
		_, done, err := tx.(*txn).send(`SELECT 1 / 0`)
		if err == nil {
			err = done()
		}
		if !isCode(err, "22012") {
			t.Fatalf("SELECT 1 / 0: %v, want division by zero", err)
		}
		if err := tx.(storage.Savepointer).RollbackTo(sp); !isCode(err, "22012") {
			t.Errorf("RollbackTo after a failed statement: %v, want the statement's error", err)
		}
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Update: %v", err)
	}
}
