package frame

import "testing"

// Splice replaces exactly the member Read found, in place, and nothing
// that merely looks like it; a slice that is not part of the message (or
// lies outside its length) is refused.
func TestSpliceReplacesOnlyTheMember(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"result":{"id":7,"content":[{"type":"text","text":"\"id\":7"}]}}` + "\n")
	f := Read(msg)
	if !f.Alike || f.ID != "7" {
		t.Fatalf("read: %+v", f)
	}
	got, ok := Splice(nil, msg, f.Top["id"], []byte(`"mcpsafe-sdk-lane-1"`))
	want := `{"jsonrpc":"2.0","id":"mcpsafe-sdk-lane-1","result":{"id":7,"content":[{"type":"text","text":"\"id\":7"}]}}` + "\n"
	if !ok || string(got) != want {
		t.Fatalf("splice: %v %s", ok, got)
	}
	if g := Read(got); !g.Alike || g.ID != `"mcpsafe-sdk-lane-1"` || string(g.Top["result"]) != string(f.Top["result"]) {
		t.Fatalf("spliced message reads %+v", g)
	}
	// With spaces around the id, and back again.
	msg = []byte(`{ "id" :  "mcpsafe-sdk-lane-1" , "jsonrpc":"2.0","method":"x","params":{}}`)
	f = Read(msg)
	got, ok = Splice([]byte("prefix:"), msg, f.Top["id"], []byte(`12`))
	if !ok || string(got) != `prefix:{ "id" :  12 , "jsonrpc":"2.0","method":"x","params":{}}` {
		t.Fatalf("splice with spaces: %v %s", ok, got)
	}
	// Not a part of msg: an equal copy, another message, an empty part.
	copied := []byte(string(f.Top["id"]))
	other := Read([]byte(`{"jsonrpc":"2.0","id":"mcpsafe-sdk-lane-1","result":{}}`))
	for name, part := range map[string][]byte{"copy": copied, "other message": other.Top["id"], "empty": nil, "past the end": msg[len(msg):]} {
		if out, ok := Splice(nil, msg, part, []byte(`1`)); ok || out != nil {
			t.Errorf("%s: spliced %s", name, out)
		}
	}
	// A part that begins inside msg's capacity but beyond its length.
	short := msg[:10]
	if _, ok := Splice(nil, short, f.Top["id"], []byte(`1`)); ok {
		t.Error("a part past the message's length was spliced")
	}
}
