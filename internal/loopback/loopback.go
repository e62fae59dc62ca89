// Package loopback says whether a host or a listen address stays on this
// machine: plain HTTP and unauthenticated listeners are allowed only there.
package loopback

import "net"

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
