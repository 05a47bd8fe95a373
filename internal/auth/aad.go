package auth

import (
	"crypto"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// MaxEmulatorTokenLifetime bounds how far in the future an emulator test
// token may expire. The SDKs' emulator credentials ask for two hours.
const MaxEmulatorTokenLifetime = 24 * time.Hour

// AADConfig makes a Verifier accept Entra ID (AAD) access tokens: RS256
// JWTs signed by one of Keys, issued by Issuer for Audience, checked
// against Now for exp and nbf.
type AADConfig struct {
	Keys     JWKS
	Issuer   string
	Audience string
	// Now tells the time for exp and nbf; nil means the verifier's clock.
	Now func() time.Time
}

// JWKS are the public keys tokens may be signed with, by key id.
type JWKS map[string]*rsa.PublicKey

// minRSABits refuses keys too small to trust.
const minRSABits = 2048

// ParseJWKS reads a JSON Web Key Set ({"keys":[...]}, as an identity
// provider publishes at its jwks_uri). It keeps the RSA signing keys and
// fails when there are none, when one lacks a kid, or when a key is
// malformed or shorter than 2048 bits.
func ParseJWKS(data []byte) (JWKS, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Use string `json:"use"`
			Kid string `json:"kid"`
			Alg string `json:"alg"`
			N   string `json:"n"`
			E   string `json:"e"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("JWKS is not a JSON key set: %w", err)
	}
	keys := JWKS{}
	for i, k := range set.Keys {
		if k.Kty != "RSA" || (k.Use != "" && k.Use != "sig") || (k.Alg != "" && k.Alg != "RS256") {
			continue
		}
		if k.Kid == "" {
			return nil, fmt.Errorf("JWKS key %d has no kid", i)
		}
		n, errN := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.N, "="))
		e, errE := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.E, "="))
		if errN != nil || errE != nil || len(e) == 0 || len(e) > 4 {
			return nil, fmt.Errorf("JWKS key %q: n or e is not base64url", k.Kid)
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < minRSABits || pub.E < 3 || pub.E%2 == 0 {
			return nil, fmt.Errorf("JWKS key %q is not an RSA key of at least %d bits", k.Kid, minRSABits)
		}
		keys[k.Kid] = pub
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS holds no RSA signing key")
	}
	return keys, nil
}

// verifyAAD checks a bearer token. A token signed by a configured JWKS key
// is checked as a real Entra ID token; otherwise, only when emulator tokens
// are allowed, the emulator's test form is accepted: a JWT whose third
// segment is the base64url of the account key in its base64 text form.
// That form carries the key in clear, so it is allowed only with the
// well-known emulator key, which is public anyway.
func (v *Verifier) verifyAAD(jwt string, now time.Time, write bool) (Principal, error) {
	bad := func(why string) (Principal, error) {
		return Principal{}, unauthorized("The AAD token is not valid: " + why + ".")
	}
	if v.aad == nil && !v.emulatorTokens {
		return Principal{}, unauthorized("AAD tokens are not accepted by this server: it was started without " +
			"an AAD issuer, audience and signing keys (--aad-jwks-file). Authorize with the account key.")
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return bad("it does not have three dot-separated parts")
	}
	header, ok := decodeJSONPart(parts[0])
	if !ok {
		return bad("its header is not base64url-encoded JSON")
	}
	claims, ok := decodeJSONPart(parts[1])
	if !ok {
		return bad("its claims are not base64url-encoded JSON")
	}
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[2], "="))
	if err != nil {
		return bad("its signature is not base64url")
	}
	if v.aad != nil {
		if pub := v.aad.key(header); pub != nil {
			return v.verifySigned(pub, parts[0]+"."+parts[1], sig, claims, now)
		}
		if !v.emulatorTokens {
			return bad("it is not signed with a trusted key")
		}
	}
	exp, why := timeClaims(claims, now, MaxClockSkew)
	if why != "" {
		return bad(why)
	}
	if exp.After(now.Add(MaxEmulatorTokenLifetime)) {
		return bad("it expires more than 24 hours from now")
	}
	match := -1
	for i, k := range v.keys {
		if k.text == EmulatorKey && hmac.Equal(sig, []byte(k.text)) && match < 0 {
			match = i
		}
	}
	if match < 0 || (write && v.keys[match].readOnly) {
		return bad("it is not signed with an accepted key")
	}
	return Principal{Method: MethodAAD, ReadOnly: v.keys[match].readOnly}, nil
}

// key returns the JWKS key a token's header names, if it is an RS256 token.
func (a *AADConfig) key(header map[string]json.RawMessage) *rsa.PublicKey {
	var alg, kid string
	if json.Unmarshal(header["alg"], &alg) != nil || alg != "RS256" || json.Unmarshal(header["kid"], &kid) != nil {
		return nil
	}
	return a.Keys[kid]
}

// verifySigned checks a JWKS-signed token's signature, issuer, audience
// and validity period.
func (v *Verifier) verifySigned(pub *rsa.PublicKey, signed string, sig []byte, claims map[string]json.RawMessage,
	now time.Time) (Principal, error) {
	bad := func(why string) (Principal, error) {
		return Principal{}, unauthorized("The AAD token is not valid: " + why + ".")
	}
	if v.aad.Now != nil {
		now = v.aad.Now()
	}
	digest := sha256.Sum256([]byte(signed))
	if rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig) != nil {
		return bad("its signature does not verify")
	}
	var iss string
	if json.Unmarshal(claims["iss"], &iss) != nil || iss != v.aad.Issuer {
		return bad("it was not issued by the configured issuer")
	}
	if !hasAudience(claims["aud"], v.aad.Audience) {
		return bad("it is not meant for the configured audience")
	}
	if _, why := timeClaims(claims, now, aadLeeway); why != "" {
		return bad(why)
	}
	return Principal{Method: MethodAAD}, nil
}

// aadLeeway is how early a signed token may be used before its nbf, for
// clocks that differ a little.
const aadLeeway = 5 * time.Minute

// timeClaims checks exp (required, in the future) and nbf (optional, not
// beyond leeway from now). It returns exp, or why the token is not valid.
func timeClaims(claims map[string]json.RawMessage, now time.Time, leeway time.Duration) (time.Time, string) {
	exp, ok := numericDate(claims["exp"])
	if !ok {
		return time.Time{}, "it has no numeric exp claim"
	}
	if !now.Before(exp) {
		return time.Time{}, "it expired at " + FormatDate(exp)
	}
	if raw, present := claims["nbf"]; present {
		nbf, ok := numericDate(raw)
		if !ok {
			return time.Time{}, "its nbf claim is not numeric"
		}
		if nbf.After(now.Add(leeway)) {
			return time.Time{}, "it is not valid before " + FormatDate(nbf)
		}
	}
	return exp, ""
}

// hasAudience reports whether aud (a string or an array of strings) names
// want.
func hasAudience(aud json.RawMessage, want string) bool {
	var one string
	if json.Unmarshal(aud, &one) == nil {
		return one == want
	}
	var many []string
	if json.Unmarshal(aud, &many) != nil {
		return false
	}
	for _, a := range many {
		if a == want {
			return true
		}
	}
	return false
}
