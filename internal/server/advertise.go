package server

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// advertise is the endpoint the database account resource (GET /) names,
// which the SDKs then send every request to. It is never taken blindly from
// the Host header, which any client or proxy may set:
//   - a loopback Host (localhost, 127.0.0.0/8, ::1) is echoed with its port,
//     since it can only lead a client back to its own machine, and port
//     forwards (a container's published port) still work;
//     (with AdvertiseHost set, that host takes the place of the name);
//   - a Host naming one of the configured public URLs gets that URL;
//   - anything else gets the first public URL, or the listen address.
func (s *Server) advertise(r *http.Request) string {
	scheme := "https"
	if r.TLS == nil {
		scheme = "http"
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	if isLoopbackName(host) && validHostHeader(r.Host) {
		if s.cfg.AdvertiseHost != "" {
			_, port, err := net.SplitHostPort(r.Host)
			if err != nil {
				return scheme + "://" + s.cfg.AdvertiseHost + "/"
			}
			return scheme + "://" + net.JoinHostPort(s.cfg.AdvertiseHost, port) + "/"
		}
		return scheme + "://" + r.Host + "/"
	}
	for _, u := range s.cfg.PublicURLs {
		pu, _ := url.Parse(u) // checked by Validate
		if strings.EqualFold(pu.Host, r.Host) {
			return publicURL(pu)
		}
	}
	if len(s.cfg.PublicURLs) > 0 {
		pu, _ := url.Parse(s.cfg.PublicURLs[0])
		return publicURL(pu)
	}
	return s.URL()
}

func publicURL(u *url.URL) string {
	return u.Scheme + "://" + u.Host + "/"
}

func isLoopbackName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// validHostHeader reports whether h is a plain host[:port], nothing that
// would change the meaning of the URL it is put into.
func validHostHeader(h string) bool {
	return h != "" && !strings.ContainsAny(h, "/?#@\\ \t\r\n")
}

// checkPublicURLs checks --public-url values: absolute http(s) URLs with a
// host name, a port from 1 to 65535 if any, and no path beyond "/".
func checkPublicURLs(urls []string) error {
	for _, u := range urls {
		pu, err := url.Parse(u)
		ok := err == nil && (pu.Scheme == "https" || pu.Scheme == "http") && pu.Hostname() != "" &&
			(pu.Path == "" || pu.Path == "/") && pu.RawQuery == "" && pu.User == nil && pu.Fragment == ""
		if ok && pu.Port() != "" {
			port, err := strconv.Atoi(pu.Port())
			ok = err == nil && port >= 1 && port <= 65535
		}
		if !ok {
			return fmt.Errorf("--public-url %q is not an http(s) URL of the form https://host:port/", u)
		}
	}
	return nil
}
