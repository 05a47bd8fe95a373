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

func newAuthenticator(keys []string, c clock.Clock) (*auth.Verifier, error) {
	return auth.NewVerifier(auth.Config{Keys: keys, Now: c.Now})
}
