package server

import (
	"fmt"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/clock"
)

func checkKey(k string) error {
	if b, err := auth.DecodeKey(k); err != nil || len(b) == 0 {
		return fmt.Errorf("the account key is not valid base64")
	}
	return nil
}

// newAuthenticator checks signatures against the wall clock: the date
// window is about the freshness of a request, which the client judges by
// its own wall clock, not about expiry, so it must not follow a clock that
// tests move by hand. Resource tokens expire, so they are issued and
// judged by the server's clock (tokens).
func newAuthenticator(keys, readOnly []string, tokens clock.Clock) (*auth.Verifier, error) {
	return auth.NewVerifier(auth.Config{Keys: keys, ReadOnlyKeys: readOnly, Now: clock.Real{}.Now, TokenNow: tokens.Now})
}
