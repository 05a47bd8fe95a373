// Package tlscert provides the certificate Mayfly serves HTTPS with.
//
// The official SDKs expect an emulator on https://localhost:8081/, so a
// fresh server needs a certificate before its first request. By default that
// is a self-signed ECDSA P-256 certificate for the DNS name localhost and the
// addresses 127.0.0.1 and ::1, kept in the data directory as cert.pem and
// key.pem so that a client told to trust it once keeps trusting it across
// restarts. The pair is regenerated only when it can no longer be used:
// missing, unparsable, mismatched, expired or about to expire, or not valid
// for those names.
//
// In in-memory mode (no directory) a new certificate is made on each start.
// Operators with their own certificate use FromFiles.
//
// Every function returns the certificate chain in PEM form as well, which the
// server publishes at /_explorer/emulator.pem for clients to trust.
package tlscert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// File names inside the directory given to LoadOrCreate.
const (
	CertFile = "cert.pem"
	KeyFile  = "key.pem"
)

// Validity is how long a generated certificate is valid. It stays under the
// 398 days some clients (macOS, browsers) accept for server certificates,
// even ones a user trusted by hand.
const Validity = 397 * 24 * time.Hour

// renewBefore is how close to expiry a stored certificate is replaced at
// start-up, so that a long-running server does not cross its expiry soon
// after starting.
const renewBefore = 30 * 24 * time.Hour

// Hosts the generated certificate is valid for.
var (
	dnsNames    = []string{"localhost"}
	ipAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
)

// LoadOrCreate returns the certificate stored in dir, creating dir and a new
// self-signed certificate there when none is usable. With dir == "" it makes
// a certificate in memory and stores nothing.
//
// The key file is written with mode 0600. The files are replaced atomically,
// so a crash while writing leaves either the old pair or the new one.
//
// now decides whether a stored certificate is still valid and dates a new one.
func LoadOrCreate(dir string, now time.Time) (tls.Certificate, []byte, error) {
	if dir == "" {
		certPEM, keyPEM, err := generate(now)
		if err != nil {
			return tls.Certificate{}, nil, err
		}
		return pair(certPEM, keyPEM)
	}
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	if cert, certPEM, err := load(certPath, keyPath, now); err == nil {
		return cert, certPEM, nil
	} else if !errors.Is(err, errUnusable) {
		return tls.Certificate{}, nil, err
	}

	certPEM, keyPEM, err := generate(now)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("create certificate directory: %w", err)
	}
	// The key goes first: a certificate without its key is unusable and
	// would be replaced on the next start anyway.
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, nil, err
	}
	if err := writeFileAtomic(certPath, certPEM, 0o600); err != nil {
		return tls.Certificate{}, nil, err
	}
	return pair(certPEM, keyPEM)
}

// FromFiles loads a PEM certificate chain and its private key, as given by
// the operator. Unlike LoadOrCreate it never replaces them and does not
// check the names or dates: the operator chose them.
func FromFiles(certFile, keyFile string) (tls.Certificate, []byte, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("read certificate key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("load certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return cert, chainPEM(cert), nil
}

// errUnusable marks a stored pair that should be replaced rather than
// reported: absent, corrupt, expired, or for the wrong names.
var errUnusable = errors.New("stored certificate unusable")

func load(certPath, keyPath string, now time.Time) (tls.Certificate, []byte, error) {
	certPEM, err := os.ReadFile(certPath)
	if errors.Is(err, fs.ErrNotExist) {
		return tls.Certificate{}, nil, errUnusable
	} else if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return tls.Certificate{}, nil, errUnusable
	} else if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("read certificate key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("%w: %v", errUnusable, err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("%w: %v", errUnusable, err)
		}
	}
	if now.Before(leaf.NotBefore) || now.Add(renewBefore).After(leaf.NotAfter) {
		return tls.Certificate{}, nil, fmt.Errorf("%w: valid from %s to %s", errUnusable, leaf.NotBefore, leaf.NotAfter)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
		if err := leaf.VerifyHostname(host); err != nil {
			return tls.Certificate{}, nil, fmt.Errorf("%w: %v", errUnusable, err)
		}
	}
	return cert, chainPEM(cert), nil
}

// generate makes a self-signed certificate and returns it and its key in PEM.
func generate(now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("generate certificate serial: %w", err)
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			CommonName:         "localhost",
			Organization:       []string{"Mayfly development certificate"},
			OrganizationalUnit: []string{host},
		},
		// An hour of slack for clients whose clock is a little behind.
		NotBefore:             now.Add(-time.Hour).UTC(),
		NotAfter:              now.Add(Validity).UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              dnsNames,
		IPAddresses:           ipAddresses,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode certificate key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

func pair(certPEM, keyPEM []byte) (tls.Certificate, []byte, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("load generated certificate: %w", err)
	}
	return cert, certPEM, nil
}

// chainPEM re-encodes the chain of cert, dropping anything else the
// operator's file held (comments, other blocks).
func chainPEM(cert tls.Certificate) []byte {
	var b bytes.Buffer
	for _, der := range cert.Certificate {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	return b.Bytes()
}

func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
