package auth

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

// testIssuer signs tokens as an identity provider would.
type testIssuer struct {
	kid string
	key *rsa.PrivateKey
}

func newTestIssuer(t *testing.T, kid string) testIssuer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return testIssuer{kid: kid, key: k}
}

// jwks renders the issuers' public keys as a JSON Web Key Set.
func jwks(issuers ...testIssuer) []byte {
	enc := base64.RawURLEncoding.EncodeToString
	type jwk struct {
		Kty string `json:"kty"`
		Use string `json:"use"`
		Kid string `json:"kid"`
		N   string `json:"n"`
		E   string `json:"e"`
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	for _, is := range issuers {
		set.Keys = append(set.Keys, jwk{Kty: "RSA", Use: "sig", Kid: is.kid, N: enc(is.key.N.Bytes()),
			E: enc(big.NewInt(int64(is.key.E)).Bytes())})
	}
	b, _ := json.Marshal(set)
	return b
}

// token signs claims with header {"alg":alg,"kid":kid}.
func (is testIssuer) token(t *testing.T, alg string, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"typ": "JWT", "alg": alg, "kid": is.kid})
	c, _ := json.Marshal(claims)
	signed := enc(h) + "." + enc(c)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, is.key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + enc(sig)
}

const (
	testIss = "https://login.microsoftonline.com/tenant/v2.0"
	testAud = "https://cosmos.azure.com"
)

func TestVerifyAADSigned(t *testing.T) {
	good := newTestIssuer(t, "k1")
	other := newTestIssuer(t, "k1") // same kid, different key
	keys, err := ParseJWKS(jwks(good))
	if err != nil {
		t.Fatal(err)
	}
	// The token clock is apart from the request clock: exp and nbf follow
	// the server's (injectable) clock.
	tokenNow := testNow.Add(100 * 24 * time.Hour)
	v := newTestVerifier(t, Config{
		Keys: []string{secondary},
		Now:  func() time.Time { return testNow },
		AAD:  &AADConfig{Keys: keys, Issuer: testIss, Audience: testAud, Now: func() time.Time { return tokenNow }},
	})
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"iss": testIss, "aud": testAud, "nbf": tokenNow.Unix(), "exp": tokenNow.Add(time.Hour).Unix()}
		if edit != nil {
			edit(c)
		}
		return c
	}
	aad := func(jwt string) Request {
		return Request{Verb: "POST", ResourceType: "docs", Authorization: AADHeader(jwt)}
	}

	for name, jwt := range map[string]string{
		"valid":          good.token(t, "RS256", claims(nil)),
		"audience array": good.token(t, "RS256", claims(func(c map[string]any) { c["aud"] = []string{"x", testAud} })),
		"no nbf":         good.token(t, "RS256", claims(func(c map[string]any) { delete(c, "nbf") })),
		"long-lived":     good.token(t, "RS256", claims(func(c map[string]any) { c["exp"] = tokenNow.AddDate(1, 0, 0).Unix() })),
	} {
		p, err := v.Verify(aad(jwt))
		if err != nil || p != (Principal{Method: MethodAAD}) {
			t.Errorf("%s: Verify = %+v, %v", name, p, err)
		}
	}

	valid := good.token(t, "RS256", claims(nil))
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+testIss+`","aud":"`+testAud+
		`","exp":99999999999}`)) + "." + parts[2]
	for _, tt := range []struct {
		name, jwt, why string
	}{
		{"other key, same kid", other.token(t, "RS256", claims(nil)), "its signature does not verify"},
		{"tampered claims", tampered, "its signature does not verify"},
		{"wrong issuer", good.token(t, "RS256", claims(func(c map[string]any) { c["iss"] = "https://evil" })),
			"it was not issued by the configured issuer"},
		{"no issuer", good.token(t, "RS256", claims(func(c map[string]any) { delete(c, "iss") })),
			"it was not issued by the configured issuer"},
		{"wrong audience", good.token(t, "RS256", claims(func(c map[string]any) { c["aud"] = []string{"x"} })),
			"it is not meant for the configured audience"},
		{"expired", good.token(t, "RS256", claims(func(c map[string]any) { c["exp"] = tokenNow.Unix() })),
			"it expired at " + FormatDate(tokenNow)},
		{"valid by the request clock only", good.token(t, "RS256", claims(func(c map[string]any) {
			c["nbf"], c["exp"] = testNow.Unix(), testNow.Add(time.Hour).Unix()
		})), "it expired at " + FormatDate(testNow.Add(time.Hour))},
		{"not yet valid", good.token(t, "RS256", claims(func(c map[string]any) { c["nbf"] = tokenNow.Add(6 * time.Minute).Unix() })),
			"it is not valid before " + FormatDate(tokenNow.Add(6*time.Minute))},
		{"no exp", good.token(t, "RS256", claims(func(c map[string]any) { delete(c, "exp") })), "it has no numeric exp claim"},
		{"unknown kid", testIssuer{kid: "k2", key: good.key}.token(t, "RS256", claims(nil)), "it is not signed with a trusted key"},
		{"alg none", strings.Replace(valid, parts[0], base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"k1"}`)), 1),
			"it is not signed with a trusted key"},
		// The account key inside a token is never accepted outside
		// emulator mode, whichever key it is.
		{"account key as signature", emulatorToken(secondary, tokenNow, tokenNow.Add(time.Hour)), "it is not signed with a trusted key"},
	} {
		p, err := v.Verify(aad(tt.jwt))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: Verify = %+v, %v; want an *Error", tt.name, p, err)
			continue
		}
		if want := "The AAD token is not valid: " + tt.why + "."; e.Status != 401 || e.Message != want {
			t.Errorf("%s: Verify error = %d %q, want 401 %q", tt.name, e.Status, e.Message, want)
		}
	}
}

// Without AAD configuration or emulator mode, no token is accepted, not
// even one carrying the account key.
func TestVerifyAADOff(t *testing.T) {
	v := newTestVerifier(t, Config{Keys: []string{secondary, EmulatorKey}, Now: func() time.Time { return testNow }})
	for _, key := range []string{secondary, EmulatorKey} {
		_, err := v.Verify(Request{Verb: "GET", Authorization: AADHeader(emulatorToken(key, testNow, testNow.Add(time.Hour)))})
		var e *Error
		if !errors.As(err, &e) || e.Status != 401 || !strings.HasPrefix(e.Message, "AAD tokens are not accepted by this server") {
			t.Errorf("token with key %.8s…: Verify error = %v, want 401 AAD tokens are not accepted", key, err)
		}
	}
}

func TestParseJWKS(t *testing.T) {
	is := newTestIssuer(t, "k1")
	keys, err := ParseJWKS(jwks(is))
	if err != nil || len(keys) != 1 || !keys["k1"].Equal(&is.key.PublicKey) {
		t.Fatalf("ParseJWKS = %v, %v", keys, err)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"not JSON":  "{",
		"no keys":   `{"keys":[]}`,
		"only EC":   `{"keys":[{"kty":"EC","kid":"e","crv":"P-256","x":"AA","y":"AA"}]}`,
		"no kid":    strings.Replace(string(jwks(is)), `"kid":"k1",`, "", 1),
		"bad n":     `{"keys":[{"kty":"RSA","kid":"a","n":"!!","e":"AQAB"}]}`,
		"small key": string(jwks(testIssuer{kid: "s", key: small})),
		"even e":    `{"keys":[{"kty":"RSA","kid":"a","n":"` + base64.RawURLEncoding.EncodeToString(is.key.N.Bytes()) + `","e":"Ag"}]}`,
	} {
		if keys, err := ParseJWKS([]byte(data)); err == nil {
			t.Errorf("%s: ParseJWKS = %v, want an error", name, keys)
		}
	}
}
