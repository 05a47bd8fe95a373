package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// DateLayout is the RFC 1123 form of x-ms-date, always in GMT.
const DateLayout = "Mon, 02 Jan 2006 15:04:05 GMT"

// FormatDate formats t for x-ms-date.
func FormatDate(t time.Time) string { return t.UTC().Format(DateLayout) }

// DecodeKey decodes a master key from its base64 form, with or without
// padding.
func DecodeKey(key string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(key)
	}
	return b, err
}

// Payload returns the string a master-key signature covers: the lowercased
// verb, the lowercased resource type, the resource link as is and the
// lowercased date, each followed by a newline, and an empty fifth line.
func Payload(verb, resourceType, resourceLink, date string) string {
	return string(appendPayload(make([]byte, 0, len(verb)+len(resourceType)+len(resourceLink)+len(date)+5),
		verb, resourceType, resourceLink, date))
}

// appendPayload appends Payload's string to dst.
func appendPayload(dst []byte, verb, resourceType, resourceLink, date string) []byte {
	dst = appendLower(dst, verb)
	dst = append(dst, '\n')
	dst = appendLower(dst, resourceType)
	dst = append(dst, '\n')
	dst = append(dst, resourceLink...)
	dst = append(dst, '\n')
	dst = appendLower(dst, date)
	return append(dst, "\n\n"...)
}

// appendLower appends strings.ToLower(s) to dst, without the string when
// s is ASCII, as the signed fields of a valid request are.
func appendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return append(dst, strings.ToLower(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// Sign returns the master-key signature of a request: the base64 of the
// HMAC-SHA256 of Payload under key (the decoded master key).
func Sign(verb, resourceType, resourceLink, date string, key []byte) string {
	return base64.StdEncoding.EncodeToString(mac(Payload(verb, resourceType, resourceLink, date), key))
}

func mac(payload string, key []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(payload))
	return h.Sum(nil)
}

// MasterHeader returns the Authorization header value for a master-key
// signature, URL-encoded as the Go SDK sends it:
// type%3Dmaster%26ver%3D1.0%26sig%3D<escaped signature>.
func MasterHeader(verb, resourceType, resourceLink, date string, key []byte) string {
	return url.QueryEscape("type=master&ver=1.0&sig=" + Sign(verb, resourceType, resourceLink, date, key))
}

// AADHeader returns the Authorization header value for an AAD token, which
// the SDKs send without URL-encoding.
func AADHeader(jwt string) string { return "type=aad&ver=1.0&sig=" + jwt }
