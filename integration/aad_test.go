package integration

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/server"
)

// tokenFunc is an azcore.TokenCredential that hands the SDK whatever
// token the test builds.
type tokenFunc func() string

func (f tokenFunc) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: f(), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

const (
	aadIssuer   = "https://login.microsoftonline.com/00000000-0000-0000-0000-000000000001/v2.0"
	aadAudience = "https://cosmos.azure.com"
)

// signedToken is an RS256 JWT as an identity provider issues it.
func signedToken(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"typ": "JWT", "alg": "RS256", "kid": kid})
	c, _ := json.Marshal(claims)
	signed := enc(h) + "." + enc(c)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + enc(sig)
}

// keyToken is the emulator's test token form, with key in place of a
// signature.
func keyToken(key string, now time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"typ":"JWT","alg":"RS256","kid":"CosmosEmulatorPrimaryMaster"}`)) + "." +
		enc([]byte(`{"nbf":`+strconv.FormatInt(now.Unix(), 10)+`,"exp":`+strconv.FormatInt(now.Add(2*time.Hour).Unix(), 10)+`}`)) +
		"." + enc([]byte(key))
}

// With an account key of its own and a JWKS, the server accepts the Go
// SDK's requests made with tokens signed by the JWKS's key, judges their
// expiry by its own clock, and refuses tokens that carry the account key.
func TestAADWithJWKS(t *testing.T) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "kid": "key-1", "n": enc(priv.N.Bytes()), "e": enc(big.NewInt(int64(priv.E)).Bytes()),
	}}})
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	own := base64.StdEncoding.EncodeToString([]byte("the account key of this deployment"))
	clk := clock.NewManual(time.Now())
	e := start(t, withManualClock(clk), func(c *server.Config) {
		c.Keys = []string{own}
		c.AAD = server.AADConfig{JWKSFile: jwksFile, Issuer: aadIssuer, Audience: aadAudience}
	})
	keyCred, err := azcosmos.NewKeyCredential(own)
	if err != nil {
		t.Fatal(err)
	}
	opts := &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: e.http, Retry: policy.RetryOptions{MaxRetries: -1}}}
	admin, err := azcosmos.NewClientWithKey(e.url, keyCred, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close) // as in start
	ctx := context.Background()
	if _, err := admin.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := admin.NewDatabase("db")
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil); err != nil {
		t.Fatal(err)
	}

	issued := clk.Now()
	signed := func() string {
		return signedToken(t, priv, "key-1", map[string]any{"iss": aadIssuer, "aud": aadAudience,
			"nbf": issued.Unix(), "exp": issued.Add(time.Hour).Unix()})
	}
	create := func(cred azcore.TokenCredential, id string) error {
		client, err := azcosmos.NewClient(e.url, cred, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(client.Close) // as in start
		c, _ := client.NewContainer("db", "c")
		_, err = c.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"`+id+`","pk":"p"}`), nil)
		return err
	}
	status := func(err error) int {
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			return re.StatusCode
		}
		return 0
	}

	if err := create(tokenFunc(signed), "a"); err != nil {
		t.Fatalf("create with a signed token: %v", err)
	}
	if err := create(tokenFunc(func() string { return keyToken(own, time.Now()) }), "b"); status(err) != http.StatusUnauthorized {
		t.Errorf("create with the account key inside a token: %v, want 401", err)
	}
	if err := create(tokenFunc(func() string { return keyToken(emulatorKey, time.Now()) }), "c"); status(err) != http.StatusUnauthorized {
		t.Errorf("create with an emulator token: %v, want 401", err)
	}
	clk.Advance(time.Hour)
	if err := create(tokenFunc(signed), "d"); status(err) != http.StatusUnauthorized {
		t.Errorf("create with a token the server's clock says expired: %v, want 401", err)
	}
}
