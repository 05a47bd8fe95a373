package pebblestore

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/cockroachdb/pebble"
)

// pebbleLogger sends Pebble's log lines to slog at debug level, so they
// stay quiet unless the server runs with debug logging.
type pebbleLogger struct {
	log *slog.Logger
}

var _ pebble.Logger = pebbleLogger{}

func (l pebbleLogger) Infof(format string, args ...any) {
	if !l.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	l.log.Debug("Pebble logged a message.", "text", strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// Fatalf is called when Pebble cannot continue safely (a failed write to
// the write-ahead log, a corrupt manifest). Pebble's code assumes it does
// not return, and a panic could be recovered by an HTTP server and leave a
// broken database serving requests, so it exits as Pebble's own default
// logger does.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.log.Error("Pebble hit a fatal error; exiting.", "text", strings.TrimSpace(fmt.Sprintf(format, args...)))
	os.Exit(1)
}

// eventListener reports the events an operator should see.
func eventListener(log *slog.Logger) *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			log.Error("Pebble background work failed.", "err", err)
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			log.Warn("Disk is slow.", "path", info.Path, "op", info.OpType.String(), "duration", info.Duration)
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			log.Warn("Writes stalled while Pebble catches up.", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			log.Info("Writes resumed.")
		},
	}
}
