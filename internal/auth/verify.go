package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Config configures a Verifier.
type Config struct {
	// Keys are the accepted read-write master keys, base64.
	Keys []string
	// ReadOnlyKeys are accepted for reads only; a write signed with one
	// fails with 403.
	ReadOnlyKeys []string
	// Now tells the time; nil means time.Now.
	Now func() time.Time
	// TokenNow is the clock resource tokens are issued and judged by; nil
	// means Now.
	TokenNow func() time.Time
	// EmulatorTokens accepts the emulator's test AAD tokens, which carry
	// the well-known emulator key in clear (see verifyAAD).
	EmulatorTokens bool
	// AAD, when set, accepts Entra ID tokens signed by its keys.
	AAD *AADConfig
}

// Verifier checks Authorization headers against a set of master keys. It is
// immutable once built and safe for concurrent use.
type Verifier struct {
	keys           []key
	now            func() time.Time
	tokenNow       func() time.Time
	emulatorTokens bool
	aad            *AADConfig
}

type key struct {
	text     string // as configured, base64: what the emulator's AAD token embeds
	secret   []byte // decoded: the HMAC key
	readOnly bool
	// macs holds HMACs keyed with secret. Keying one hashes the key's
	// padded blocks and allocates two digests; every signed request
	// needs one per configured key.
	macs *sync.Pool
}

// signer is an HMAC-SHA256 keyed with one key, and room for its sums.
type signer struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

func newKey(text string, secret []byte, readOnly bool) key {
	return key{text: text, secret: secret, readOnly: readOnly, macs: &sync.Pool{
		New: func() any { return &signer{h: hmac.New(sha256.New, secret)} },
	}}
}

// matches reports whether sig is the HMAC of payload under k, in constant
// time.
func (k key) matches(sig, payload []byte) bool {
	s := k.macs.Get().(*signer)
	s.h.Reset()
	s.h.Write(payload)
	ok := hmac.Equal(sig, s.h.Sum(s.sum[:0]))
	k.macs.Put(s)
	return ok
}

// NewVerifier returns a Verifier for cfg. It fails when no key is given or a
// key is not base64.
func NewVerifier(cfg Config) (*Verifier, error) {
	v := &Verifier{now: cfg.Now, emulatorTokens: cfg.EmulatorTokens, aad: cfg.AAD}
	if v.now == nil {
		v.now = time.Now
	}
	v.tokenNow = cfg.TokenNow
	if v.tokenNow == nil {
		v.tokenNow = v.now
	}
	add := func(keys []string, readOnly bool) error {
		for i, k := range keys {
			secret, err := DecodeKey(k)
			if err != nil || len(secret) == 0 {
				return fmt.Errorf("master key %d is not base64", i)
			}
			v.keys = append(v.keys, newKey(k, secret, readOnly))
		}
		return nil
	}
	if err := add(cfg.Keys, false); err != nil {
		return nil, err
	}
	if err := add(cfg.ReadOnlyKeys, true); err != nil {
		return nil, fmt.Errorf("read-only %w", err)
	}
	if len(v.keys) == 0 {
		return nil, errors.New("no master key configured")
	}
	if a := cfg.AAD; a != nil && (len(a.Keys) == 0 || a.Issuer == "" || a.Audience == "") {
		return nil, errors.New("AAD tokens need signing keys, an issuer and an audience")
	}
	return v, nil
}

// Request is what Verify needs to know about a request.
type Request struct {
	Verb         string // the HTTP method
	ResourceType string // from ParseResource
	ResourceLink string // from ParseResource
	// Authorization is the header as received, URL-encoded or not.
	Authorization string
	// Date is x-ms-date, or the Date header when x-ms-date is absent.
	Date string
	// Now is when the request arrived; zero means the verifier's clock.
	Now time.Time
	// Query marks a query sent as POST: it only reads, so a read-only key
	// may sign it. Otherwise only GET and HEAD count as reads.
	Query bool
}

// Method says how a request was authenticated.
type Method int

// The methods.
const (
	MethodMasterKey Method = iota + 1
	MethodAAD
)

func (m Method) String() string {
	switch m {
	case MethodMasterKey:
		return "master key"
	case MethodAAD:
		return "AAD"
	case MethodResource:
		return "resource token"
	}
	return "unknown"
}

// Principal is who a verified request acts as.
type Principal struct {
	Method Method
	// ReadOnly is set when a read-only key signed the request.
	ReadOnly bool
	// Token holds a resource token's claims; the caller checks that its
	// permission still exists and covers the request.
	Token *TokenClaims
}

// Verify checks req's Authorization header and, for master-key tokens, its
// date. It returns the principal, or an *Error:
//   - 401 when the header is missing or malformed, the signature matches no
//     key, the date is missing or not RFC 1123, an AAD token is malformed,
//     expired or not signed with a key, or a resource token was not issued
//     with an accepted key, or a read-only key signs a write;
//   - 403 when the date lies more than MaxClockSkew from now, or a resource
//     token has expired.
//
// The caller still refuses database and container operations made with AAD
// (see AADMetadataForbidden).
func (v *Verifier) Verify(req Request) (Principal, error) {
	now := req.Now
	if now.IsZero() {
		now = v.now()
	}
	tok, err := parseAuthorization(req.Authorization)
	if err != nil {
		return Principal{}, err
	}
	write := !req.Query && !strings.EqualFold(req.Verb, "GET") && !strings.EqualFold(req.Verb, "HEAD")
	switch tok.typ {
	case "master":
		return v.verifyMaster(req, tok.sig, now, write)
	case "aad":
		return v.verifyAAD(tok.sig, now, write)
	}
	return v.verifyResource(tok.sig)
}

func (v *Verifier) verifyMaster(req Request, sig string, now time.Time, write bool) (Principal, error) {
	if req.Date == "" {
		return Principal{}, unauthorized(msgNoDate)
	}
	date, ok := parseDate(req.Date)
	if !ok {
		return Principal{}, unauthorized(msgNoDate)
	}
	if date.Before(now.Add(-MaxClockSkew)) || date.After(now.Add(MaxClockSkew)) {
		return Principal{}, &Error{
			Status: StatusForbidden,
			Code:   CodeForbidden,
			Message: fmt.Sprintf("The authorization token is not valid at the current time. Please create "+
				"another token and retry (token start time: %s, token expiry time: %s, current server time: %s)",
				FormatDate(date), FormatDate(date.Add(MaxClockSkew)), FormatDate(now)),
		}
	}
	var buf [256]byte
	payload := appendPayload(buf[:0], req.Verb, req.ResourceType, req.ResourceLink, req.Date)
	wrong := func() error {
		return unauthorized(msgWrongKey + " Server used the following payload to sign: '" +
			strings.ReplaceAll(string(payload), "\n", `\n`) + "'")
	}
	// A signature is 32 bytes, 44 characters in base64; a longer one
	// cannot match, and would not fit the buffer.
	var gotBuf [48]byte
	if len(sig) > base64.StdEncoding.EncodedLen(len(gotBuf)) {
		return Principal{}, wrong()
	}
	n, err := base64.StdEncoding.Decode(gotBuf[:], []byte(sig))
	if err != nil {
		return Principal{}, wrong()
	}
	got := gotBuf[:n]
	match := -1
	for i, k := range v.keys {
		// Every key is tried, so the time taken does not tell which
		// matched.
		if k.matches(got, payload) && match < 0 {
			match = i
		}
	}
	if match < 0 {
		return Principal{}, wrong()
	}
	if write && v.keys[match].readOnly {
		return Principal{}, readOnlyWrite()
	}
	return Principal{Method: MethodMasterKey, ReadOnly: v.keys[match].readOnly}, nil
}

func decodeJSONPart(s string) (map[string]json.RawMessage, bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, false
	}
	var m map[string]json.RawMessage
	if !bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{")) || json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	return m, true
}

// numericDate reads a JWT NumericDate: seconds since the epoch.
func numericDate(raw json.RawMessage) (time.Time, bool) {
	var f float64
	if raw == nil || json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || math.Abs(f) > 1e12 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// parseDate reads an RFC 1123 date. The SDKs send GMT; a numeric zone is
// accepted too.
func parseDate(s string) (time.Time, bool) {
	for _, layout := range []string{DateLayout, "Mon, 02 Jan 2006 15:04:05 UTC", time.RFC1123Z} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

type token struct {
	typ, ver, sig string
}

// parseAuthorization parses type=<type>&ver=<version>&sig=<signature>. The
// SDKs URL-encode master-key and resource tokens but send AAD tokens as they
// are, so the header is percent-decoded only when it starts with "type%3D"
// (in any case). Unknown parameters are ignored.
func parseAuthorization(h string) (token, error) {
	h = strings.TrimSpace(h)
	if h == "" {
		return token{}, unauthorized(msgNoAuth)
	}
	if len(h) >= 7 && strings.EqualFold(h[:7], "type%3d") {
		d, err := url.PathUnescape(h)
		if err != nil {
			return token{}, malformed("it is not validly URL-encoded")
		}
		h = d
	}
	var t token
	seen := map[string]bool{}
	for part := range strings.SplitSeq(h, "&") {
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			return token{}, malformed("a parameter has no '='")
		}
		name = strings.ToLower(strings.TrimSpace(name))
		var dst *string
		switch name {
		case "type":
			dst = &t.typ
		case "ver":
			dst = &t.ver
		case "sig":
			dst = &t.sig
		default:
			continue
		}
		if seen[name] {
			return token{}, malformed("it repeats " + name)
		}
		seen[name] = true
		*dst = value
	}
	t.typ = strings.ToLower(t.typ)
	switch {
	case t.typ == "":
		return token{}, malformed("it has no type")
	case t.sig == "":
		return token{}, malformed("it has no sig")
	case (t.typ == "master" || t.typ == "aad") && t.ver != "1.0":
		return token{}, malformed("version " + quote(t.ver) + " is not 1.0")
	case t.typ == "resource" && t.ver != "1" && t.ver != "1.0":
		return token{}, malformed("version " + quote(t.ver) + " is not 1")
	case t.typ != "master" && t.typ != "aad" && t.typ != "resource":
		return token{}, malformed("type " + quote(t.typ) + " is not master, aad or resource")
	}
	return t, nil
}

func malformed(why string) *Error {
	return unauthorized("The authorization header is malformed: " + why +
		". Expected type=master&ver=1.0&sig=<signature>, URL-encoded.")
}

// readOnlyWrite is the refusal of a write signed with a read-only key. The
// service does not tell it from a wrong key: 401 with the same message
// (a stored procedure run with a read-only key, or a delete, is refused
// with "The input authorization token can't serve the request").
func readOnlyWrite() *Error {
	return unauthorized(msgWrongKey + " A read-only key cannot authorize a write.")
}
