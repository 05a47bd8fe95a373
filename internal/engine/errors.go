package engine

import (
	"errors"
	"fmt"
)

// Code classifies an engine error. The transport turns each code into an
// HTTP status exactly once (internal/httpapi); the engine never speaks HTTP.
type Code int

// The error codes, named after the Cosmos DB error codes they become.
const (
	Internal Code = iota
	BadRequest
	Unauthorized
	Forbidden
	NotFound
	Conflict
	PreconditionFailed
	RequestEntityTooLarge
	NotModified
	FailedDependency
	TooManyRequests
	ServiceUnavailable
	Gone
	// RequestTimeout is a request whose time ran out before it could
	// answer (the service's 408).
	RequestTimeout
)

// Substatus codes the SDKs act on.
const (
	SubPartitionKeyMismatch    = 1001
	SubCrossPartitionNotServed = 1004
	SubPartitionKeyRangeGone   = 1002
	SubOwnerResourceNotFound   = 1003
	SubAADMetadataNotPermitted = 5300
	SubRequestRateTooLarge     = 3200
	SubResponseTooLarge        = 3402
)

// Error is the engine's one error type: a code, an optional substatus, a
// message fit for clients, and optional extra information (the query plan of
// a cross-partition query the gateway does not serve).
type Error struct {
	Code       Code
	SubStatus  int
	Message    string
	Additional []byte // JSON, sent as additionalErrorInfo
}

func (e *Error) Error() string { return e.Message }

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, Internal when err is not an *Error.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

func notFound() *Error {
	return errorf(NotFound, "Entity with the specified id does not exist in the system.")
}

func conflict() *Error {
	return errorf(Conflict, "Entity with the specified id already exists in the system.")
}

func preconditionFailed() *Error {
	return errorf(PreconditionFailed, "One of the specified pre-condition is not met.")
}

// staleMatch reports whether an If-Match header value names another
// version than the one with etag: set, not "*", and different.
func staleMatch(ifMatch, etag string) bool {
	return ifMatch != "" && ifMatch != "*" && ifMatch != etag
}
