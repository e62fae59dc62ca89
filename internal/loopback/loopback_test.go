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
