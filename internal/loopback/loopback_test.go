package loopback

import "testing"

func TestAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:80": true, "[::1]:8080": true, "127.1.2.3:9": true,
		":8080": false, "0.0.0.0:8080": false, "10.0.0.1:80": false, "example.com:80": false, "garbage": false,
	} {
		if got := Addr(addr); got != want {
			t.Errorf("Addr(%q) = %v", addr, got)
		}
	}
}

// A Host header names a loopback host with or without a port; a rebinding
// name, an empty host or a look-alike does not.
func TestHostPort(t *testing.T) {
	for hp, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.1": true, "localhost": true, "localhost:3000": true,
		"[::1]:8080": true, "[::1]": true, "::1": true,
		"": false, ":8080": false, "evil.example:80": false, "localhost.evil.example": false,
		"127.0.0.1.nip.io": false, "0.0.0.0:80": false, "[::]:80": false, "LOCALHOST": false,
	} {
		if got := HostPort(hp); got != want {
			t.Errorf("HostPort(%q) = %v, want %v", hp, got, want)
		}
	}
}
