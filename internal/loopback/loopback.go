// Package loopback says whether a host or a listen address stays on this
// machine: plain HTTP and unauthenticated listeners are allowed only there.
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host (a name or an IP address, no port) is
// loopback: "localhost" or a loopback IP.
func Host(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr reports whether a listen address (host:port) binds only to
// loopback. An empty host binds every interface and is not loopback.
func Addr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return Host(host)
}

// HostPort reports whether hostport, a Host header or an address with or
// without a port ("127.0.0.1:8080", "[::1]", "localhost"), names a
// loopback host.
func HostPort(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	return Host(host)
}
