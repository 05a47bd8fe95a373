package server

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"syscall"
)

// DefaultAddr is where Mayfly listens unless told otherwise: the loopback
// interfaces only, so a server started with the well-known emulator key is
// not reachable from the network.
const DefaultAddr = "localhost:8081"

// listen opens the listeners for addr. The name "localhost" means both
// loopback addresses, 127.0.0.1 and ::1, on the same port: clients resolve
// localhost to either, and the SDKs' emulator endpoint is
// https://localhost:8081/. ::1 is skipped when the machine has no IPv6.
// Any other host is listened on as given.
func listen(addr string) ([]net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if host != "localhost" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		return []net.Listener{ln}, nil
	}
	// With port 0 the IPv4 listener picks a port that may be taken on ::1;
	// then the pair is tried again.
	for range 10 {
		v4, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		p := strconv.Itoa(v4.Addr().(*net.TCPAddr).Port)
		v6, err := net.Listen("tcp", net.JoinHostPort("::1", p))
		switch {
		case err == nil:
			return []net.Listener{v4, v6}, nil
		case noIPv6(err):
			return []net.Listener{v4}, nil
		case port == "0" && errors.Is(err, syscall.EADDRINUSE):
			_ = v4.Close()
			continue
		}
		_ = v4.Close()
		return nil, fmt.Errorf("listen on %s (::1): %w", addr, err)
	}
	return nil, fmt.Errorf("listen on %s: no port free on both 127.0.0.1 and ::1", addr)
}

// noIPv6 reports whether err says the machine cannot listen on ::1 at all.
func noIPv6(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) ||
		errors.Is(err, syscall.EPROTONOSUPPORT)
}

// exposed returns the addresses among lns that other machines may reach:
// everything but loopback.
func exposed(lns []net.Listener) []string {
	var out []string
	for _, ln := range lns {
		a, ok := ln.Addr().(*net.TCPAddr)
		if !ok || a.IP == nil || !a.IP.IsLoopback() {
			out = append(out, ln.Addr().String())
		}
	}
	return out
}

// hasEmulatorKey reports whether the well-known key is among keys.
func hasEmulatorKey(keys []string) bool {
	return slices.Contains(keys, EmulatorKey)
}
