// Package auth checks the Authorization header of Cosmos DB REST requests:
// master-key signatures (HMAC-SHA256 over the verb, resource type, resource
// link and date), and the AAD bearer tokens the emulator's test credential
// sends. It also turns a request path into the resource type and link that
// signatures cover, which the HTTP layer routes with too.
//
// The package takes plain strings and returns typed results; it knows
// nothing of net/http. Every failure is an *Error carrying the status,
// substatus, code and message the service answers with, so the HTTP layer
// only copies them into the response.
package auth

import (
	"fmt"
	"time"
)

// EmulatorKey is the well-known master key of the Cosmos DB emulator, which
// the SDKs' emulator tests and most local tooling use.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// MaxClockSkew is how far x-ms-date may lie from the server's clock, either
// way. It is also the lifetime of a master-key token.
const MaxClockSkew = 15 * time.Minute

// Statuses and codes of the errors this package returns.
const (
	StatusBadRequest   = 400
	StatusUnauthorized = 401
	StatusForbidden    = 403

	CodeBadRequest   = "BadRequest"
	CodeUnauthorized = "Unauthorized"
	CodeForbidden    = "Forbidden"
)

// SubstatusAADMetadata is the substatus of the 403 answering a database or
// container operation made with an AAD token.
const SubstatusAADMetadata = 5300

// Error is an authentication or addressing failure, ready to become a
// response: Status is the HTTP status, Substatus the x-ms-substatus (0 when
// none), Code the body's "code" and Message its "message".
type Error struct {
	Status    int
	Substatus int
	Code      string
	Message   string
}

func (e *Error) Error() string {
	if e.Substatus != 0 {
		return fmt.Sprintf("%d/%d %s: %s", e.Status, e.Substatus, e.Code, e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

func unauthorized(msg string) *Error {
	return &Error{Status: StatusUnauthorized, Code: CodeUnauthorized, Message: msg}
}

// The service's messages (docs/protocol.md §1.2, §1.5).
const (
	msgWrongKey = "The input authorization token can't serve the request. The wrong key is being used or " +
		"the expected payload is not built as per the protocol."
	msgNoDate = "Authorization token mandates Date header. Please pass in RFC 1123 style date format."
	msgNoAuth = "Required Header authorization is missing. Ensure a valid Authorization token is passed."
)

// AADMetadataForbidden returns the error the service answers when a
// database or container is read, created, replaced or deleted with an AAD
// token: 403 with substatus 5300. account names the account in the message;
// verb and path are the request's, as in "POST /dbs/db1/colls".
func AADMetadataForbidden(account, verb, path string) *Error {
	return &Error{
		Status:    StatusForbidden,
		Substatus: SubstatusAADMetadata,
		Code:      CodeForbidden,
		Message: fmt.Sprintf("Request blocked by Auth %s : The given request [%s %s] cannot be authorized by "+
			"AAD token in data plane. Learn more: https://aka.ms/cosmos-native-rbac.", account, verb, path),
	}
}
