package ast

// Error is what every query package returns for a query the service would
// refuse: a syntax error, an unknown name, a bad argument, a limit reached.
// The engine answers it with 400 Bad Request. Message reads like the
// service's; Code is the service's error code when known (SC1001 for
// syntax errors, SC2001 for unresolved identifiers, ...).
type Error struct {
	Code    string
	Message string
	// Pos and End delimit the offending text, as byte offsets into the
	// query; both are -1 when the error has no position.
	Pos, End Pos
	// Err is an underlying cause, such as an error from a UDF.
	Err error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Errorf-style helpers are deliberately absent: messages are fixed texts
// modelled on the service's, built where they are raised.

// NewError returns an Error without a position.
func NewError(code, msg string) *Error { return &Error{Code: code, Message: msg, Pos: -1, End: -1} }
