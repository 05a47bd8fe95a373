package server

import (
	"log/slog"
	"net/http"
	"time"
)

// Timeouts bound how long a connection may hold the server's resources, so
// that a client that sends slowly, or never reads what it is sent, cannot
// pin memory and goroutines forever.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers.
	ReadHeader time.Duration
	// Read bounds reading a whole request, headers and body. Bodies are at
	// most about 2 MiB, so the default leaves even slow links ample room.
	Read time.Duration
	// Write bounds the time from the end of the request's headers to the
	// end of the response. It must exceed the longest a request may run
	// (a long query page), or such responses are cut off.
	Write time.Duration
	// Idle bounds how long a kept-alive connection waits for its next
	// request.
	Idle time.Duration
}

// The defaults of Timeouts.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = time.Minute
	DefaultWriteTimeout      = 5 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
)

func (t *Timeouts) fill() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.ReadHeader, DefaultReadHeaderTimeout)
	def(&t.Read, DefaultReadTimeout)
	def(&t.Write, DefaultWriteTimeout)
	def(&t.Idle, DefaultIdleTimeout)
}

// server returns an http.Server for h with these timeouts.
func (t Timeouts) server(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}
