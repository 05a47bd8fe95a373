package tlscert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func leafOf(t *testing.T, cert tls.Certificate) *x509.Certificate {
	t.Helper()
	if len(cert.Certificate) == 0 {
		t.Fatal("certificate has no chain")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func TestInMemory(t *testing.T) {
	cert, certPEM, err := LoadOrCreate("", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leaf := leafOf(t, cert)
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key is %T, want ECDSA P-256", leaf.PublicKey)
	}
	if leaf.IsCA {
		t.Error("certificate is a CA; clients reject CA certificates used by servers")
	}
	for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Errorf("not valid for %s: %v", host, err)
		}
	}
	if err := leaf.VerifyHostname("example.com"); err == nil {
		t.Error("valid for example.com")
	}
	if d := time.Until(leaf.NotAfter); d < Validity-2*time.Hour || d > Validity {
		t.Errorf("valid for another %s, want about %s", d, Validity)
	}
	block, rest := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("certificate PEM is not one CERTIFICATE block:\n%s", certPEM)
	}
	if !bytes.Equal(block.Bytes, cert.Certificate[0]) {
		t.Error("PEM differs from the served certificate")
	}

	// Each in-memory start makes a new key.
	cert2, _, err := LoadOrCreate("", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(cert.Certificate[0], cert2.Certificate[0]) {
		t.Error("two in-memory certificates are identical")
	}
}

func TestCreateThenReuse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // does not exist yet
	cert1, pem1, err := LoadOrCreate(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode %o, want 600", perm)
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, pem1) {
		t.Error("returned PEM differs from cert.pem")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want cert.pem and key.pem only", len(entries))
	}

	cert2, pem2, err := LoadOrCreate(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cert1.Certificate[0], cert2.Certificate[0]) || !bytes.Equal(pem1, pem2) {
		t.Error("second start made a new certificate instead of reusing the stored one")
	}
}

func TestRegenerates(t *testing.T) {
	otherCert, otherKey, err := generate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		spoil func(t *testing.T, dir string)
	}{
		{"cert garbage", func(t *testing.T, dir string) { write(t, dir, CertFile, []byte("not a certificate")) }},
		{"key garbage", func(t *testing.T, dir string) {
			write(t, dir, KeyFile, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
		}},
		{"cert missing", func(t *testing.T, dir string) { remove(t, dir, CertFile) }},
		{"key missing", func(t *testing.T, dir string) { remove(t, dir, KeyFile) }},
		{"key of another certificate", func(t *testing.T, dir string) { write(t, dir, KeyFile, otherKey) }},
		{"cert of another key", func(t *testing.T, dir string) { write(t, dir, CertFile, otherCert) }},
		{"expired", func(t *testing.T, dir string) {
			c, k, err := generate(time.Now().Add(-2 * Validity))
			if err != nil {
				t.Fatal(err)
			}
			write(t, dir, CertFile, c)
			write(t, dir, KeyFile, k)
		}},
		{"about to expire", func(t *testing.T, dir string) {
			c, k, err := generate(time.Now().Add(-Validity + 24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			write(t, dir, CertFile, c)
			write(t, dir, KeyFile, k)
		}},
		{"not yet valid", func(t *testing.T, dir string) {
			c, k, err := generate(time.Now().Add(48 * time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			write(t, dir, CertFile, c)
			write(t, dir, KeyFile, k)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, before, err := LoadOrCreate(dir, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			tt.spoil(t, dir)
			cert, after, err := LoadOrCreate(dir, time.Now())
			if err != nil {
				t.Fatalf("LoadOrCreate after spoiling: %v", err)
			}
			if bytes.Equal(before, after) {
				t.Error("kept the old certificate")
			}
			leaf := leafOf(t, cert)
			if time.Now().Before(leaf.NotBefore) || time.Now().After(leaf.NotAfter) {
				t.Errorf("new certificate not valid now: %s to %s", leaf.NotBefore, leaf.NotAfter)
			}
			// And the new pair is what a third start finds.
			_, again, err := LoadOrCreate(dir, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, again) {
				t.Error("regenerated certificate was not stored")
			}
		})
	}
}

func TestUnwritableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	write(t, filepath.Dir(file), "file", []byte("x"))
	if _, _, err := LoadOrCreate(filepath.Join(file, "sub"), time.Now()); err == nil {
		t.Error("LoadOrCreate under a regular file succeeded")
	}
}

func TestFromFiles(t *testing.T) {
	dir := t.TempDir()
	_, certPEM, err := LoadOrCreate(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// An operator's file may carry text around the blocks; the published
	// PEM holds the certificates only.
	withText := append([]byte("subject=CN = localhost\n"), certPEM...)
	write(t, dir, "operator.pem", withText)
	cert, gotPEM, err := FromFiles(filepath.Join(dir, "operator.pem"), filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotPEM, certPEM) {
		t.Errorf("FromFiles PEM:\n%s\nwant:\n%s", gotPEM, certPEM)
	}
	if len(cert.Certificate) != 1 {
		t.Errorf("chain length %d", len(cert.Certificate))
	}

	if _, _, err := FromFiles(filepath.Join(dir, "missing.pem"), filepath.Join(dir, KeyFile)); err == nil {
		t.Error("missing certificate file accepted")
	}
	if _, _, err := FromFiles(filepath.Join(dir, CertFile), filepath.Join(dir, "missing.pem")); err == nil {
		t.Error("missing key file accepted")
	}
	if _, _, err := FromFiles(filepath.Join(dir, KeyFile), filepath.Join(dir, CertFile)); err == nil {
		t.Error("swapped files accepted")
	}
}

// TestHandshake checks what clients do: trust the published PEM and connect
// by each name the certificate is for.
func TestHandshake(t *testing.T) {
	cert, certPEM, err := LoadOrCreate("", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		t.Fatal("PEM not accepted by a CertPool")
	}
	for _, name := range []string{"localhost", "127.0.0.1"} {
		client := &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: name},
		}}
		resp, err := client.Get("https://127.0.0.1:" + port + "/")
		if err != nil {
			t.Errorf("as %s: %v", name, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok" {
			t.Errorf("as %s: body %q", name, body)
		}
	}

	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"},
	}}
	if resp, err := client.Get("https://127.0.0.1:" + port + "/"); err == nil {
		resp.Body.Close()
		t.Error("handshake for example.com succeeded")
	}
}

func write(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}
