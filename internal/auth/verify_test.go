package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testDate = "Tue, 01 Nov 1994 08:12:31 GMT"

var testNow = time.Date(1994, 11, 1, 8, 12, 31, 0, time.UTC)

// The vectors of docs/protocol.md §1.1, from the path on the wire to the
// signature and header.
func TestSignProtocolVectors(t *testing.T) {
	key, err := DecodeKey(EmulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		verb, path string
		sig        string
		header     string
	}{
		{"GET", "/dbs/mydb", "V4kLO2EPXsNPZQ1SJ2bcBpEA48LEKZYnV+u5btozGb0=", ""},
		{"POST", "/dbs/mydb/colls/mycoll/docs", "/MmzePYPMjZ2ZflFuLIc/ziLQ5Dyhdb3yoaxaGslkSs=", ""},
		{"GET", "/", "N4K9sTh55gXE+YRPcuWlVBBIfFr7vgRBGMdn4Z+Nels=",
			"type%3Dmaster%26ver%3D1.0%26sig%3DN4K9sTh55gXE%2BYRPcuWlVBBIfFr7vgRBGMdn4Z%2BNels%3D"},
	}
	v := newTestVerifier(t, Config{Keys: []string{EmulatorKey}})
	for _, tt := range tests {
		r, err := ParseResource(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := Sign(tt.verb, r.Type, r.Link, testDate, key); got != tt.sig {
			t.Errorf("%s %s: Sign = %s, want %s", tt.verb, tt.path, got, tt.sig)
		}
		h := MasterHeader(tt.verb, r.Type, r.Link, testDate, key)
		if tt.header != "" && h != tt.header {
			t.Errorf("%s %s: MasterHeader = %s, want %s", tt.verb, tt.path, h, tt.header)
		}
		p, err := v.Verify(Request{Verb: tt.verb, ResourceType: r.Type, ResourceLink: r.Link,
			Authorization: h, Date: testDate, Now: testNow})
		if err != nil || p != (Principal{Method: MethodMasterKey}) {
			t.Errorf("%s %s: Verify = %+v, %v", tt.verb, tt.path, p, err)
		}
	}
}

func TestPayload(t *testing.T) {
	got := Payload("GET", "Dbs", "dbs/MyDb", testDate)
	want := "get\ndbs\ndbs/MyDb\ntue, 01 nov 1994 08:12:31 gmt\n\n"
	if got != want {
		t.Errorf("Payload = %q, want %q", got, want)
	}
	// Fields beyond ASCII are lower-cased as strings.ToLower does; the
	// link is signed as it is.
	got = Payload("GÉT", "DÖCS", "dbs/Ä", "TUE")
	if want := "gét\ndöcs\ndbs/Ä\ntue\n\n"; got != want {
		t.Errorf("Payload = %q, want %q", got, want)
	}
}

func TestFormatDate(t *testing.T) {
	if got := FormatDate(testNow.In(time.FixedZone("X", 3600))); got != testDate {
		t.Errorf("FormatDate = %q, want %q", got, testDate)
	}
}

var (
	primary   = EmulatorKey
	secondary = base64.StdEncoding.EncodeToString([]byte("a second, rotated master key....."))
	readOnly  = base64.StdEncoding.EncodeToString([]byte("the read-only key of the account"))
	stranger  = base64.StdEncoding.EncodeToString([]byte("a key this server does not know"))
)

func newTestVerifier(t testing.TB, cfg Config) *Verifier {
	t.Helper()
	v, err := NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// signed returns a request for verb on the link, signed with key at date.
func signed(verb, typ, link, date, key string) Request {
	k, _ := DecodeKey(key)
	return Request{Verb: verb, ResourceType: typ, ResourceLink: link, Date: date,
		Authorization: MasterHeader(verb, typ, link, date, k)}
}

func TestVerifyMaster(t *testing.T) {
	clock := testNow
	v := newTestVerifier(t, Config{
		Keys:         []string{primary, secondary},
		ReadOnlyKeys: []string{readOnly},
		Now:          func() time.Time { return clock },
	})
	rawHeader := func(r Request) Request {
		r.Authorization = strings.NewReplacer("%3D", "=", "%26", "&", "%2B", "+", "%2F", "/").Replace(r.Authorization)
		return r
	}
	tests := []struct {
		name string
		req  Request
		want Principal
	}{
		{"primary", signed("GET", "dbs", "dbs/db1", testDate, primary), Principal{Method: MethodMasterKey}},
		{"secondary", signed("DELETE", "docs", "dbs/db1/colls/c/docs/x", testDate, secondary), Principal{Method: MethodMasterKey}},
		{"read-only read", signed("GET", "docs", "dbs/db1/colls/c/docs/x", testDate, readOnly),
			Principal{Method: MethodMasterKey, ReadOnly: true}},
		{"read-only head", signed("HEAD", "docs", "dbs/db1/colls/c/docs/x", testDate, readOnly),
			Principal{Method: MethodMasterKey, ReadOnly: true}},
		{"read-only query", func() Request {
			r := signed("POST", "docs", "dbs/db1/colls/c", testDate, readOnly)
			r.Query = true
			return r
		}(), Principal{Method: MethodMasterKey, ReadOnly: true}},
		{"header not URL-encoded", rawHeader(signed("GET", "dbs", "dbs/db1", testDate, primary)), Principal{Method: MethodMasterKey}},
		{"lower-case escapes", func() Request {
			r := signed("GET", "dbs", "dbs/db1", testDate, primary)
			r.Authorization = strings.ToLower(r.Authorization[:7]) + r.Authorization[7:]
			return r
		}(), Principal{Method: MethodMasterKey}},
		{"verb case", func() Request {
			r := signed("get", "dbs", "dbs/db1", testDate, primary)
			r.Verb = "GET"
			return r
		}(), Principal{Method: MethodMasterKey}},
		{"date 15 minutes old", signed("GET", "", "", FormatDate(testNow.Add(-MaxClockSkew)), primary), Principal{Method: MethodMasterKey}},
		{"date 15 minutes ahead", signed("GET", "", "", FormatDate(testNow.Add(MaxClockSkew)), primary), Principal{Method: MethodMasterKey}},
		{"numeric zone", signed("GET", "", "", "Tue, 01 Nov 1994 09:12:31 +0100", primary), Principal{Method: MethodMasterKey}},
		{"request time", func() Request {
			r := signed("GET", "", "", FormatDate(testNow.Add(time.Hour)), primary)
			r.Now = testNow.Add(time.Hour)
			return r
		}(), Principal{Method: MethodMasterKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Verify = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVerifyFailures(t *testing.T) {
	v := newTestVerifier(t, Config{
		Keys:         []string{primary, secondary},
		ReadOnlyKeys: []string{readOnly},
		Now:          func() time.Time { return testNow },
	})
	good := signed("GET", "dbs", "dbs/db1", testDate, primary)
	with := func(f func(r *Request)) Request {
		r := good
		f(&r)
		return r
	}
	wrongKey := "The input authorization token can't serve the request. The wrong key is being used or the " +
		"expected payload is not built as per the protocol. Server used the following payload to sign: " +
		`'get\ndbs\ndbs/db1\ntue, 01 nov 1994 08:12:31 gmt\n\n'`
	noDate := "Authorization token mandates Date header. Please pass in RFC 1123 style date format."
	window := func(start, expiry string) string {
		return "The authorization token is not valid at the current time. Please create another token and retry " +
			"(token start time: " + start + ", token expiry time: " + expiry + ", current server time: " + testDate + ")"
	}
	malformed := func(why string) string {
		return "The authorization header is malformed: " + why + ". Expected type=master&ver=1.0&sig=<signature>, URL-encoded."
	}
	tests := []struct {
		name    string
		req     Request
		status  int
		message string
	}{
		{"no header", with(func(r *Request) { r.Authorization = "" }), 401,
			"Required Header authorization is missing. Ensure a valid Authorization token is passed."},
		{"blank header", with(func(r *Request) { r.Authorization = "  " }), 401,
			"Required Header authorization is missing. Ensure a valid Authorization token is passed."},
		{"no equals", with(func(r *Request) { r.Authorization = "Bearer abc" }), 401, malformed("a parameter has no '='")},
		{"no type", with(func(r *Request) { r.Authorization = "ver=1.0&sig=abc" }), 401, malformed("it has no type")},
		{"no sig", with(func(r *Request) { r.Authorization = "type=master&ver=1.0" }), 401, malformed("it has no sig")},
		{"empty sig", with(func(r *Request) { r.Authorization = "type=master&ver=1.0&sig=" }), 401, malformed("it has no sig")},
		{"no version", with(func(r *Request) { r.Authorization = "type=master&sig=abc" }), 401, malformed("version '' is not 1.0")},
		{"wrong version", with(func(r *Request) { r.Authorization = "type=master&ver=2.0&sig=abc" }), 401, malformed("version '2.0' is not 1.0")},
		{"repeated sig", with(func(r *Request) { r.Authorization = "type=master&ver=1.0&sig=a&sig=b" }), 401, malformed("it repeats sig")},
		{"unknown type", with(func(r *Request) { r.Authorization = "type=basic&ver=1.0&sig=abc" }), 401,
			malformed("type 'basic' is not master, aad or resource")},
		{"bad escape", with(func(r *Request) { r.Authorization = "type%3Dmaster%26ver%3D1.0%26sig%3D%zz" }), 401,
			malformed("it is not validly URL-encoded")},
		{"foreign resource token", with(func(r *Request) { r.Authorization = "type%3Dresource%26ver%3D1%26sig%3Dabc%3Bdef%3B" }), 401,
			"The resource token is not valid: it was not issued by this account or was altered."},
		{"resource token version", with(func(r *Request) { r.Authorization = "type=resource&ver=2&sig=abc" }), 401,
			malformed("version '2' is not 1")},
		{"no date", with(func(r *Request) { r.Date = "" }), 401, noDate},
		{"not RFC 1123", with(func(r *Request) { r.Date = "1994-11-01T08:12:31Z" }), 401, noDate},
		{"date too old", signed("GET", "dbs", "dbs/db1", "Tue, 01 Nov 1994 07:57:30 GMT", primary), 403,
			window("Tue, 01 Nov 1994 07:57:30 GMT", "Tue, 01 Nov 1994 08:12:30 GMT")},
		{"date too new", signed("GET", "dbs", "dbs/db1", "Tue, 01 Nov 1994 08:27:32 GMT", primary), 403,
			window("Tue, 01 Nov 1994 08:27:32 GMT", "Tue, 01 Nov 1994 08:42:32 GMT")},
		{"unknown key", signed("GET", "dbs", "dbs/db1", testDate, stranger), 401, wrongKey},
		{"other verb signed", with(func(r *Request) { r.Verb = "DELETE" }), 401, strings.Replace(wrongKey, "'get", "'delete", 1)},
		{"other link signed", with(func(r *Request) { r.ResourceLink = "dbs/db2" }), 401, strings.Replace(wrongKey, "dbs/db1", "dbs/db2", 1)},
		{"other date signed", with(func(r *Request) { r.Date = "Tue, 01 Nov 1994 08:12:32 GMT" }), 401,
			strings.Replace(wrongKey, ":31", ":32", 1)},
		{"sig not base64", with(func(r *Request) { r.Authorization = "type=master&ver=1.0&sig=%%%" }), 401, wrongKey},
		{"sig of other bytes", with(func(r *Request) {
			r.Authorization = "type=master&ver=1.0&sig=" + base64.StdEncoding.EncodeToString(make([]byte, 32))
		}), 401, wrongKey},
		{"sig too long to be one", with(func(r *Request) {
			r.Authorization = "type=master&ver=1.0&sig=" + base64.StdEncoding.EncodeToString(make([]byte, 49))
		}), 401, wrongKey},
		{"sig cut short", with(func(r *Request) {
			sig := strings.TrimPrefix(good.Authorization, "type%3Dmaster%26ver%3D1.0%26sig%3D")
			sig, _ = url.QueryUnescape(sig)
			raw, _ := base64.StdEncoding.DecodeString(sig)
			r.Authorization = "type=master&ver=1.0&sig=" + base64.StdEncoding.EncodeToString(raw[:31])
		}), 401, wrongKey},
		{"sig with bytes after it", with(func(r *Request) {
			sig := strings.TrimPrefix(good.Authorization, "type%3Dmaster%26ver%3D1.0%26sig%3D")
			sig, _ = url.QueryUnescape(sig)
			raw, _ := base64.StdEncoding.DecodeString(sig)
			r.Authorization = "type=master&ver=1.0&sig=" + base64.StdEncoding.EncodeToString(append(raw, 0))
		}), 401, wrongKey},
		// A read-only key's signature is good; the right is missing.
		{"read-only write", signed("PUT", "dbs", "dbs/db1", testDate, readOnly), 401, readOnlyWrite().Message},
		{"read-only POST", signed("POST", "dbs", "dbs/db1", testDate, readOnly), 401, readOnlyWrite().Message},
		{"read-only DELETE", signed("DELETE", "docs", "dbs/db1/colls/c/docs/x", testDate, readOnly), 401, readOnlyWrite().Message},
		{"read-only key, wrong payload", with(func(r *Request) {
			r.Authorization = signed("PUT", "dbs", "dbs/db2", testDate, readOnly).Authorization
			r.Verb = "PUT"
		}), 401, strings.Replace(wrongKey, "'get", "'put", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.Verify(tt.req)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify = %+v, %v; want an *Error", p, err)
			}
			code := map[int]string{401: "Unauthorized", 403: "Forbidden"}[tt.status]
			if e.Status != tt.status || e.Code != code || e.Substatus != 0 || e.Message != tt.message {
				t.Errorf("Verify error = %d %s %q\nwant          %d %s %q", e.Status, e.Code, e.Message, tt.status, code, tt.message)
			}
		})
	}
}

// emulatorToken builds a token as the Go SDK's emulator test credential does.
func emulatorToken(key string, nbf, exp time.Time) string {
	header := `{"typ":"JWT","alg":"RS256","x5t":"CosmosEmulatorPrimaryMaster","kid":"CosmosEmulatorPrimaryMaster"}`
	claims := fmt.Sprintf(`{
		"appid":"localhost", "tid": "EmulatorFederation", "scp": "user_impersonation",
		"nbf":%d, "exp":%d, "iat":%d,
		"iss":"https://sts.fake-issuer.net/7b1999a1-dfd7-440e-8204-00170979b984",
		"aud":"https://localhost.localhost"
	}`, nbf.Unix(), exp.Unix(), nbf.Unix())
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(claims)) + "." + enc([]byte(key))
}

func TestVerifyAAD(t *testing.T) {
	v := newTestVerifier(t, Config{
		Keys:           []string{primary, secondary},
		ReadOnlyKeys:   []string{readOnly},
		Now:            func() time.Time { return testNow },
		EmulatorTokens: true,
	})
	enc := base64.RawURLEncoding.EncodeToString
	valid := emulatorToken(primary, testNow, testNow.Add(2*time.Hour))
	parts := strings.Split(valid, ".")
	aad := func(jwt string) Request {
		return Request{Verb: "POST", ResourceType: "docs", Authorization: AADHeader(jwt)}
	}

	ok := []struct {
		name string
		req  Request
		want Principal
	}{
		{"emulator token", aad(valid), Principal{Method: MethodAAD}},
		{"URL-encoded", Request{Verb: "GET", Authorization: "type%3Daad%26ver%3D1.0%26sig%3D" + valid}, Principal{Method: MethodAAD}},
		{"padded segments", aad(parts[0] + "." + parts[1] + "==." + parts[2] + "="), Principal{Method: MethodAAD}},
		{"nbf within skew", aad(emulatorToken(primary, testNow.Add(10*time.Minute), testNow.Add(time.Hour))), Principal{Method: MethodAAD}},
		{"expires in a day", aad(emulatorToken(primary, testNow, testNow.Add(24*time.Hour))), Principal{Method: MethodAAD}},
		{"no nbf", aad(parts[0] + "." + enc([]byte(`{"exp":`+strconv.FormatInt(testNow.Unix()+60, 10)+`}`)) + "." + parts[2]),
			Principal{Method: MethodAAD}},
		{"fractional exp", aad(parts[0] + "." + enc([]byte(`{"exp":`+strconv.FormatInt(testNow.Unix(), 10)+`.5}`)) + "." + parts[2]),
			Principal{Method: MethodAAD}},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Verify = %+v, want %+v", got, tt.want)
			}
		})
	}

	claims := func(json string) string { return parts[0] + "." + enc([]byte(json)) + "." + parts[2] }
	bad := []struct {
		name string
		jwt  string
		why  string
	}{
		{"expired", emulatorToken(primary, testNow.Add(-3*time.Hour), testNow.Add(-time.Second)),
			"it expired at Tue, 01 Nov 1994 08:12:30 GMT"},
		{"expires now", emulatorToken(primary, testNow.Add(-3*time.Hour), testNow), "it expired at " + testDate},
		{"not yet valid", emulatorToken(primary, testNow.Add(16*time.Minute), testNow.Add(time.Hour)),
			"it is not valid before Tue, 01 Nov 1994 08:28:31 GMT"},
		{"unknown key", emulatorToken(stranger, testNow, testNow.Add(time.Hour)), "it is not signed with an accepted key"},
		{"decoded key", parts[0] + "." + parts[1] + "." + enc([]byte("\x0b")), "it is not signed with an accepted key"},
		// Only the public emulator key may travel in a token: any other
		// key would be revealed to whoever sees the token.
		{"read-only key", emulatorToken(readOnly, testNow, testNow.Add(time.Hour)), "it is not signed with an accepted key"},
		{"secondary key", emulatorToken(secondary, testNow, testNow.Add(time.Hour)), "it is not signed with an accepted key"},
		{"a thousand years", emulatorToken(primary, testNow, testNow.AddDate(1000, 0, 0)), "it expires more than 24 hours from now"},
		{"a day and a second", emulatorToken(primary, testNow, testNow.Add(24*time.Hour+time.Second)),
			"it expires more than 24 hours from now"},
		{"two parts", parts[0] + "." + parts[1], "it does not have three dot-separated parts"},
		{"four parts", valid + ".x", "it does not have three dot-separated parts"},
		{"header not base64", "!!." + parts[1] + "." + parts[2], "its header is not base64url-encoded JSON"},
		{"header not JSON", enc([]byte("hello")) + "." + parts[1] + "." + parts[2], "its header is not base64url-encoded JSON"},
		{"header an array", enc([]byte("[1]")) + "." + parts[1] + "." + parts[2], "its header is not base64url-encoded JSON"},
		{"header null", enc([]byte("null")) + "." + parts[1] + "." + parts[2], "its header is not base64url-encoded JSON"},
		{"claims not JSON", parts[0] + "." + enc([]byte("{")) + "." + parts[2], "its claims are not base64url-encoded JSON"},
		{"no exp", claims(`{"nbf":1}`), "it has no numeric exp claim"},
		{"string exp", claims(`{"exp":"99999999999"}`), "it has no numeric exp claim"},
		{"huge exp", claims(`{"exp":1e300}`), "it has no numeric exp claim"},
		{"string nbf", claims(`{"exp":99999999999,"nbf":"0"}`), "its nbf claim is not numeric"},
		{"signature not base64url", parts[0] + "." + parts[1] + ".a+b/", "its signature is not base64url"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.Verify(aad(tt.jwt))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify = %+v, %v; want an *Error", p, err)
			}
			want := "The AAD token is not valid: " + tt.why + "."
			if e.Status != 401 || e.Code != "Unauthorized" || e.Message != want {
				t.Errorf("Verify error = %d %s %q, want 401 Unauthorized %q", e.Status, e.Code, e.Message, want)
			}
		})
	}
}

func TestNewVerifier(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Keys: []string{"not base64!"}},
		{Keys: []string{""}},
		{Keys: []string{primary}, ReadOnlyKeys: []string{"%%"}},
	} {
		if _, err := NewVerifier(cfg); err == nil {
			t.Errorf("NewVerifier(%+v) succeeded", cfg)
		}
	}
	// Only read-only keys is a valid (read-only) server, and unpadded keys
	// are accepted.
	v := newTestVerifier(t, Config{ReadOnlyKeys: []string{strings.TrimRight(primary, "=")}})
	p, err := v.Verify(signed("GET", "", "", FormatDate(time.Now()), primary))
	if err != nil || !p.ReadOnly {
		t.Errorf("Verify with the system clock = %+v, %v", p, err)
	}
}

func TestErrors(t *testing.T) {
	e := AADMetadataForbidden("mayfly", "POST", "/dbs/db1/colls")
	want := &Error{Status: 403, Substatus: 5300, Code: "Forbidden",
		Message: "Request blocked by Auth mayfly : The given request [POST /dbs/db1/colls] cannot be authorized by " +
			"AAD token in data plane. Learn more: https://aka.ms/cosmos-native-rbac."}
	if *e != *want {
		t.Errorf("AADMetadataForbidden = %+v", e)
	}
	if got := e.Error(); !strings.HasPrefix(got, "403/5300 Forbidden: Request blocked") {
		t.Errorf("Error() = %q", got)
	}
	if got := unauthorized("x").Error(); got != "401 Unauthorized: x" {
		t.Errorf("Error() = %q", got)
	}
	var err error = unauthorized("x")
	var target *Error
	if !errors.As(fmt.Errorf("wrapped: %w", err), &target) || target.Status != 401 {
		t.Error("errors.As does not find *Error")
	}
	if MethodMasterKey.String() != "master key" || MethodAAD.String() != "AAD" || Method(0).String() != "unknown" {
		t.Error("Method.String")
	}
}

func FuzzParseAuthorization(f *testing.F) {
	key, _ := DecodeKey(EmulatorKey)
	f.Add(MasterHeader("GET", "dbs", "dbs/db", testDate, key))
	f.Add("type=master&ver=1.0&sig=abc")
	f.Add(AADHeader(emulatorToken(EmulatorKey, testNow, testNow.Add(time.Hour))))
	f.Add("type%3Dresource%26ver%3D1%26sig%3Da%3Bb%3B")
	f.Add("type%3d%zz")
	f.Add("TYPE=Master&VER=1.0&sig=a=b&x=y")
	v := newTestVerifier(f, Config{Keys: []string{EmulatorKey}, Now: func() time.Time { return testNow }, EmulatorTokens: true})
	f.Fuzz(func(t *testing.T, h string) {
		tok, err := parseAuthorization(h)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != 401 {
				t.Fatalf("parseAuthorization(%q): %v is not a 401 *Error", h, err)
			}
		} else if tok.sig == "" || (tok.typ != "master" && tok.typ != "aad" && tok.typ != "resource") {
			t.Fatalf("parseAuthorization(%q) = %+v", h, tok)
		}
		_, err = v.Verify(Request{Verb: "GET", ResourceType: "dbs", ResourceLink: "dbs/db", Authorization: h, Date: testDate})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || (e.Status != 401 && e.Status != 403) {
				t.Fatalf("Verify(%q): %v", h, err)
			}
		}
	})
}

func TestResourceTokenRoundTrip(t *testing.T) {
	now := testNow
	v := newTestVerifier(t, Config{Keys: []string{primary}, ReadOnlyKeys: []string{readOnly}, Now: func() time.Time { return now }})
	c := TokenClaims{UserRid: "AAAAAQAAAAI=", PermID: "p1", Etag: `"e"`, Expiry: testNow.Add(time.Hour).Unix()}
	tok := v.IssueResourceToken(c)
	for _, h := range []string{tok, url.QueryEscape(tok), strings.Replace(tok, "ver=1&", "ver=1.0&", 1)} {
		p, err := v.Verify(Request{Verb: "GET", Authorization: h})
		if err != nil || p.Method != MethodResource || p.Token == nil || *p.Token != c {
			t.Fatalf("Verify(%q) = %+v, %v; want the claims %+v", h, p, err, c)
		}
	}
	// Another account's key does not verify it.
	other := newTestVerifier(t, Config{Keys: []string{secondary}, Now: func() time.Time { return now }})
	if _, err := other.Verify(Request{Verb: "GET", Authorization: tok}); err == nil {
		t.Fatal("a token of another account verified")
	}
	now = testNow.Add(time.Hour)
	var e *Error
	if _, err := v.Verify(Request{Verb: "GET", Authorization: tok}); !errors.As(err, &e) || e.Status != 403 {
		t.Fatalf("expired token: %v, want 403", err)
	}
}
