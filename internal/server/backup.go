package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

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
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	if err := copyTree(src, dst); err != nil {
		return fmt.Errorf("copy the backup: %w", err)
	}
	st, err := pebblestore.Open(pebblestore.Options{Dir: dst, Filter: storeFilter})
	if err != nil {
		return errors.Join(fmt.Errorf("the restored store does not open: %w", err), os.RemoveAll(dst))
	}
	return st.Close()
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
