package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/storage/pgstore"
)

// copySnapshot copies every key of one snapshot of src into a new Pebble
// store in dir: a backup of a store that cannot checkpoint itself,
// consistent as of the snapshot, taken while src serves.
func copySnapshot(ctx context.Context, src storage.Store, dir string) error {
	dst, err := pebblestore.Open(pebblestore.Options{Dir: dir, Filter: storeFilter})
	if err != nil {
		return err
	}
	err = src.View(ctx, func(r storage.Reader) error {
		return copyKeys(ctx, r, dst)
	})
	return errors.Join(err, dst.Close())
}

// copyKeys writes every key r holds into dst, a thousand per transaction.
func copyKeys(ctx context.Context, r storage.Reader, dst storage.Store) error {
	it, err := r.NewIter(storage.IterParams{})
	if err != nil {
		return err
	}
	defer it.Close()
	type kv struct{ k, v []byte }
	var batch []kv
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := dst.Update(ctx, func(tx storage.Txn) error {
			for _, p := range batch {
				if err := tx.Set(p.k, p.v); err != nil {
					return err
				}
			}
			return nil
		})
		batch = batch[:0]
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		batch = append(batch, kv{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
		if len(batch) == 1000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return flush()
}

// RestoreToPostgres writes the backup in from into the PostgreSQL database
// at url, which must hold no data yet. Interrupted, it leaves part of the
// backup: drop and create the database, and run it again.
func RestoreToPostgres(ctx context.Context, from, url string) error {
	src := filepath.Join(from, "store")
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a backup made by mayfly backup: it has no store directory", from)
	}
	bk, err := pebblestore.Open(pebblestore.Options{Dir: src, ReadOnly: true, Filter: storeFilter})
	if err != nil {
		return fmt.Errorf("open the backup: %w", err)
	}
	defer bk.Close()
	pg, err := pgstore.Open(ctx, pgstore.Options{URL: url})
	if err != nil {
		return err
	}
	defer pg.Close()
	empty := true
	if err := pg.View(ctx, func(r storage.Reader) error {
		it, err := r.NewIter(storage.IterParams{})
		if err != nil {
			return err
		}
		empty = !it.First()
		return errors.Join(it.Err(), it.Close())
	}); err != nil {
		return err
	}
	if !empty {
		return errors.New("the database already holds Mayfly data; restore into an empty database")
	}
	return bk.View(ctx, func(r storage.Reader) error { return copyKeys(ctx, r, pg) })
}

// Restore makes dataDir a data directory holding the backup in from (a
// directory mayfly backup wrote), for a server to start on. dataDir must
// not hold a store yet. The backup is checked by opening it. Items that
// expired after the backup was taken stay expired: expiry is judged by
// the clock, not by what the files hold (ttl.md B1).
func Restore(from, dataDir string) error {
	src := filepath.Join(from, "store")
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a backup made by mayfly backup: it has no store directory", from)
	}
	dst := filepath.Join(dataDir, "store")
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s already holds a store; restore into a new data directory", dataDir)
	}
	// Opened first, which takes its lock: the data directory of a
	// running server is refused, as its files change under a copy.
	bk, err := pebblestore.Open(pebblestore.Options{Dir: src, ReadOnly: true, Filter: storeFilter})
	if err != nil {
		return fmt.Errorf("open the backup: %w", err)
	}
	if err := bk.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	// The copy is made, and opened, beside the store's place and renamed
	// into it once whole: a copy that fails or is stopped half way leaves
	// no store a server would start on, and a run again clears it first.
	tmp := dst + ".restoring"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := copyTree(src, tmp); err != nil {
		return errors.Join(fmt.Errorf("copy the backup: %w", err), os.RemoveAll(tmp))
	}
	st, err := pebblestore.Open(pebblestore.Options{Dir: tmp, Filter: storeFilter})
	if err != nil {
		return errors.Join(fmt.Errorf("the restored store does not open: %w", err), os.RemoveAll(tmp))
	}
	if err := st.Close(); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	if err := os.Rename(tmp, dst); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	return syncDir(dataDir)
}

// syncDir makes the entries of dir durable: a rename into it is not until
// the directory itself is synced.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// copyTree copies the regular files under src into dst, which it creates.
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
			return os.MkdirAll(target, 0o700)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		if err := out.Sync(); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
