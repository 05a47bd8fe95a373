package auth

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// A resource token is the `_token` of a permission, which a client then
// sends as its whole Authorization header (type=resource&ver=1&sig=…). Its
// sig is claims "." mac: claims is the base64url JSON of TokenClaims, mac
// the base64url HMAC-SHA256 of claims under a key derived from a
// read-write master key. Nobody without a master key can make one, and
// changing a claim breaks the mac. The claims name one version of one
// permission (its user's rid, its id and its etag), not what it grants:
// the server reads the grant from the stored permission on every request,
// so deleting or replacing the permission revokes the token at once.

// Resource token lifetimes, as the service allows them.
const (
	DefaultTokenLifetime = time.Hour
	MinTokenLifetime     = 10 * time.Second
	MaxTokenLifetime     = 5 * time.Hour
)

// TokenClaims is what a resource token asserts.
type TokenClaims struct {
	UserRid string `json:"u"`
	PermID  string `json:"p"`
	Etag    string `json:"e"`
	Expiry  int64  `json:"x"` // Unix seconds
}

// MethodResource marks a request authorized by a resource token.
const MethodResource Method = 3

// tokenKey derives the resource-token key from a master key, so a token's
// mac is never a master-key signature of something else.
func tokenKey(secret []byte) []byte {
	return mac("mayfly resource token v1", secret)
}

// IssueResourceToken returns the token for c, signed with the first
// read-write master key.
func (v *Verifier) IssueResourceToken(c TokenClaims) string {
	raw, _ := json.Marshal(c)
	claims := base64.RawURLEncoding.EncodeToString(raw)
	var key []byte
	for _, k := range v.keys {
		if !k.readOnly {
			key = tokenKey(k.secret)
			break
		}
	}
	return "type=resource&ver=1&sig=" + claims + "." + base64.RawURLEncoding.EncodeToString(mac(claims, key))
}

// TokenNow is the clock resource tokens are issued and judged by.
func (v *Verifier) TokenNow() time.Time { return v.tokenNow() }

func (v *Verifier) verifyResource(sig string) (Principal, error) {
	bad := unauthorized("The resource token is not valid: it was not issued by this account or was altered.")
	claims, macText, ok := strings.Cut(sig, ".")
	if !ok {
		return Principal{}, bad
	}
	got, err := base64.RawURLEncoding.DecodeString(macText)
	if err != nil {
		return Principal{}, bad
	}
	match := false
	for _, k := range v.keys {
		if !k.readOnly && hmac.Equal(got, mac(claims, tokenKey(k.secret))) {
			match = true
		}
	}
	if !match {
		return Principal{}, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(claims)
	var c TokenClaims
	if err != nil || json.Unmarshal(raw, &c) != nil {
		return Principal{}, bad
	}
	now := v.tokenNow()
	if exp := time.Unix(c.Expiry, 0); !now.Before(exp) {
		return Principal{}, &Error{Status: StatusForbidden, Code: CodeForbidden, Message: fmt.Sprintf(
			"The authorization token is not valid at the current time. Please create another token and retry "+
				"(token expiry time: %s, current server time: %s)", FormatDate(exp), FormatDate(now))}
	}
	return Principal{Method: MethodResource, Token: &c}, nil
}

// Forbidden is the refusal of a request its resource token does not cover.
func Forbidden() *Error {
	return &Error{Status: StatusForbidden, Code: CodeForbidden, Message: "Insufficient permissions provided in " +
		"the authorization header for the corresponding request. Please retry with another authorization header."}
}

// Revoked is the refusal of a resource token whose permission was deleted
// or replaced after it was issued.
func Revoked() *Error {
	return unauthorized("The resource token is no longer valid: its permission was deleted or changed. " +
		"Read the permission again for a new token.")
}
