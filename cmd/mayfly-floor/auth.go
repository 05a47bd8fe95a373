package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// verifier checks the master-key signature of a request.
type verifier func(r *http.Request) error

var pathUnescape = url.PathUnescape

// newVerifier returns a check of master-key signatures made with key.
//
// TODO(auth): this is a temporary stand-in, written from
// cosmos-rest-protocol.md §1.1, until internal/auth lands; the floor must
// then call internal/auth so that it pays exactly the signature cost Mayfly
// pays. It checks the signature only, not the date window.
func newVerifier(key string) (verifier, error) {
	secret, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return nil, fmt.Errorf("key is not base64: %w", err)
	}
	return func(r *http.Request) error {
		header, err := url.QueryUnescape(r.Header.Get("Authorization"))
		if err != nil {
			return fmt.Errorf("authorization header: %w", err)
		}
		// Split by hand: the decoded signature is base64, whose "+" a
		// query parser would turn into a space.
		fields := map[string]string{}
		for _, kv := range strings.Split(header, "&") {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		if fields["type"] != "master" {
			return errors.New("authorization header is not a master-key token")
		}
		sig, err := base64.StdEncoding.DecodeString(fields["sig"])
		if err != nil {
			return errors.New("signature is not base64")
		}
		date := r.Header.Get("x-ms-date")
		if date == "" {
			return errors.New("Authorization token mandates Date header. Please pass in RFC 1123 style date format.")
		}
		typ, link := resourceOf(r.URL.EscapedPath())
		mac := hmac.New(sha256.New, secret)
		fmt.Fprintf(mac, "%s\n%s\n%s\n%s\n\n", strings.ToLower(r.Method), typ, link, strings.ToLower(date))
		if !hmac.Equal(mac.Sum(nil), sig) {
			return errors.New("The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol.")
		}
		return nil
	}, nil
}

// resourceOf gives the resource type and link a client signs for a path:
// with an even number of segments the path names a resource (type = its
// collection segment); with an odd number it names a feed (link = the
// parent).
func resourceOf(escapedPath string) (typ, link string) {
	segs := segments(escapedPath)
	if len(segs) == 0 {
		return "", ""
	}
	if len(segs)%2 == 0 {
		typ = segs[len(segs)-2]
		if typ == "offers" {
			return typ, strings.ToLower(segs[len(segs)-1])
		}
		return typ, strings.Join(segs, "/")
	}
	return segs[len(segs)-1], strings.Join(segs[:len(segs)-1], "/")
}
