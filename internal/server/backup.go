package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
)

// BackupOptions says which running server to back up, and where to.
type BackupOptions struct {
	Endpoint string // the server's URL, e.g. https://localhost:8081/
	Key      string // the read-write account key (base64)
	CAFile   string // a PEM file to trust; empty: the system's roots
	Insecure bool   // skip certificate verification
	To       string // a new directory on the server's machine
}

// Backup asks the running server at o.Endpoint to write a consistent copy
// of its data into o.To (POST /_mayfly/backup, signed with the account
// key). The server goes on serving meanwhile.
func Backup(ctx context.Context, o BackupOptions) error {
	to, err := filepath.Abs(o.To)
	if err != nil {
		return err
	}
	key, err := auth.DecodeKey(o.Key)
	if err != nil {
		return fmt.Errorf("the account key: %w", err)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.Insecure}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s holds no certificate", o.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
	u, err := url.JoinPath(o.Endpoint, "_mayfly", "backup")
	if err != nil {
		return fmt.Errorf("the endpoint %q: %w", o.Endpoint, err)
	}
	body, _ := json.Marshal(map[string]string{"to": to})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	date := auth.FormatDate(clock.Real{}.Now())
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-07-15")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", auth.MasterHeader(http.MethodPost, "_mayfly", "_mayfly/backup", date, key))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("reach the server: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		var e struct{ Message string }
		if json.Unmarshal(msg, &e) == nil && e.Message != "" {
			return fmt.Errorf("the server answered %d: %s", resp.StatusCode, e.Message)
		}
		return fmt.Errorf("the server answered %d: %s", resp.StatusCode, msg)
	}
	return nil
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
