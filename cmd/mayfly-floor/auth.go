package main

import (
	"net/http"
	"strings"

	"github.com/mayfly-db/mayfly/internal/auth"
)

// verifier checks a request the way Mayfly does, with internal/auth, and
// returns the resource it addresses, so the floor pays the same price for
// parsing and signatures as the server it is the floor for.
type verifier func(r *http.Request) (auth.Resource, error)

func newVerifier(cfg auth.Config) (verifier, error) {
	v, err := auth.NewVerifier(cfg)
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) (auth.Resource, error) {
		res, err := auth.ParseResource(r.URL.EscapedPath())
		if err != nil {
			return res, err
		}
		date := r.Header.Get("x-ms-date")
		if date == "" {
			date = r.Header.Get("Date")
		}
		_, err = v.Verify(auth.Request{
			Verb:          r.Method,
			ResourceType:  res.Type,
			ResourceLink:  res.Link,
			Authorization: r.Header.Get("Authorization"),
			Date:          date,
			Query:         strings.HasPrefix(r.Header.Get("Content-Type"), "application/query+json"),
		})
		return res, err
	}, nil
}
