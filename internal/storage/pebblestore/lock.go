package pebblestore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// holderFile sits next to Pebble's LOCK file and names the process that
// holds the lock: its pid on the first line, its command line on the
// second. Pebble's lock is an fcntl lock, which says nothing about who
// holds it, so a refused server could otherwise only say "resource
// temporarily unavailable". The file is rewritten by each new holder; a
// stale one left by a crash is harmless, because it is read only when the
// lock is actually held by someone.
const holderFile = "LOCK.holder"

// ErrLocked is wrapped by the error Open returns when another process, or
// another Store in this process, has the directory open.
var ErrLocked = errors.New("the data directory is in use")

// lockDir takes Pebble's directory lock on dir, creating dir if needed,
// and records this process as its holder. On refusal the error names the
// holder.
func lockDir(dir string) (*pebble.Lock, error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("create %q: %w", dir, err)
	}
	lock, err := pebble.LockDirectory(dir, privateFS{FS: vfs.Default})
	if err != nil {
		if !isLockConflict(err) {
			return nil, fmt.Errorf("lock %q: %w", dir, err)
		}
		return nil, fmt.Errorf("%w: %s is locked by %s; stop that process or give this one another data directory",
			ErrLocked, dir, describeHolder(dir))
	}
	// Best effort: the holder file only improves a later refusal message.
	_ = writeHolder(dir)
	return lock, nil
}

// isLockConflict reports whether err from pebble.LockDirectory means the
// lock is held, as opposed to, say, an unwritable directory. fcntl's
// F_SETLK answers EAGAIN or EACCES when another process holds the lock;
// Pebble itself refuses a second lock from the same process. EACCES from
// opening the lock file is a permission the user lacks, not a holder.
func isLockConflict(err error) bool {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Op == "open" {
		return false
	}
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		strings.Contains(err.Error(), "lock held by current process")
}

func writeHolder(dir string) error {
	var b bytes.Buffer
	b.WriteString(strconv.Itoa(os.Getpid()))
	b.WriteByte('\n')
	b.WriteString(redact(os.Args))
	b.WriteByte('\n')
	return os.WriteFile(filepath.Join(dir, holderFile), b.Bytes(), 0o600)
}

// describeHolder names the process holding dir's lock as well as it can
// tell: the pid and command line the holder recorded, and, where /proc
// shows it, the command line that pid runs now.
func describeHolder(dir string) string {
	raw, err := os.ReadFile(filepath.Join(dir, holderFile))
	if err != nil {
		return "another process (it did not record its pid)"
	}
	pidLine, cmd, _ := strings.Cut(string(raw), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(pidLine))
	if err != nil || pid <= 0 {
		return "another process (its pid record is unreadable)"
	}
	if pid == os.Getpid() {
		return fmt.Sprintf("this process (pid %d): the directory is already open here", pid)
	}
	if live, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(live) > 0 {
		cmd = redact(strings.Split(string(bytes.TrimRight(live, "\x00")), "\x00"))
	}
	if cmd = strings.TrimSpace(cmd); cmd != "" {
		return fmt.Sprintf("process %d (%s)", pid, cmd)
	}
	return fmt.Sprintf("process %d", pid)
}

// redact joins a command line with the values of key flags (--key, and
// anything else whose name mentions a key, a secret or a token) replaced,
// so that neither the holder file nor a refusal message carries a secret.
func redact(args []string) string {
	out := make([]string, 0, len(args))
	hide := false
	for _, a := range args {
		switch {
		case hide:
			a, hide = "[redacted]", false
		case strings.HasPrefix(a, "-"):
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if secretFlag(name) {
				if hasValue {
					a = a[:strings.IndexByte(a, '=')+1] + "[redacted]"
				} else {
					hide = true
				}
			}
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

func secretFlag(name string) bool {
	name = strings.ToLower(name)
	if strings.HasSuffix(name, "-file") || name == "cert-key" {
		return false // a path, not a secret
	}
	return strings.Contains(name, "key") || strings.Contains(name, "secret") || strings.Contains(name, "token")
}
