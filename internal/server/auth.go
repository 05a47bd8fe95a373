package server

import (
	"errors"
	"fmt"
	"os"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/clock"
)

// AADConfig turns on Entra ID (AAD) tokens signed by the keys in JWKSFile
// (a JSON Web Key Set), issued by Issuer for Audience. All three or none.
//
// Without it, AAD tokens are refused, except in emulator mode (the
// well-known emulator key, i.e. no --key or --key-file): there the SDKs'
// emulator test tokens, which carry that public key instead of a
// signature, are accepted when they expire within a day.
type AADConfig struct {
	JWKSFile string
	Issuer   string
	Audience string
}

func (a AADConfig) check() error {
	if (a.JWKSFile == "") != (a.Issuer == "") || (a.JWKSFile == "") != (a.Audience == "") {
		return errors.New("--aad-jwks-file, --aad-issuer and --aad-audience must be given together")
	}
	return nil
}

func checkKey(k string) error {
	if b, err := auth.DecodeKey(k); err != nil || len(b) == 0 {
		return fmt.Errorf("the account key is not valid base64")
	}
	return nil
}

// newAuthenticator checks signatures against the wall clock: the date
// window is about the freshness of a request, which the client judges by
// its own wall clock, not about expiry, so it must not follow a clock that
// tests move by hand. Resource tokens and AAD tokens' exp and nbf are
// expiry, so they follow the server's clock.
func newAuthenticator(cfg Config) (*auth.Verifier, error) {
	ac := auth.Config{Keys: cfg.Keys, ReadOnlyKeys: cfg.ReadOnlyKeys, Now: clock.Real{}.Now, TokenNow: cfg.Clock.Now,
		EmulatorTokens: hasEmulatorKey(cfg.Keys)}
	if cfg.AAD.JWKSFile != "" {
		data, err := os.ReadFile(cfg.AAD.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("--aad-jwks-file: %w", err)
		}
		keys, err := auth.ParseJWKS(data)
		if err != nil {
			return nil, fmt.Errorf("--aad-jwks-file %s: %w", cfg.AAD.JWKSFile, err)
		}
		ac.AAD = &auth.AADConfig{Keys: keys, Issuer: cfg.AAD.Issuer, Audience: cfg.AAD.Audience, Now: cfg.Clock.Now}
	}
	return auth.NewVerifier(ac)
}
