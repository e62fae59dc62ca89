package frame

import (
	"strings"
	"testing"
)

// BenchmarkRead: the reader's cost on a small call and on a 64 KiB result,
// the two frames every pass-through call carries.
func BenchmarkRead(b *testing.B) {
	call := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello","n":3},"_meta":{"progressToken":7}}}` + "\n")
	big := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("abcdefgh", 8<<10) + `"}],"structuredContent":{"a":1,"b":[1,2,3]}}}` + "\n")
	for _, c := range []struct {
		name  string
		frame []byte
	}{{"call", call}, {"result64k", big}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.frame)))
			b.ReportAllocs()
			for b.Loop() {
				if !Read(c.frame).Alike {
					b.Fatal("not alike")
				}
			}
		})
	}
}
