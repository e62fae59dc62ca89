package journal

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/prompt"
)

func TestSensitiveName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		// redacted
		{"password", true}, {"Password", true}, {"user_password", true}, {"PASSWD", true},
		{"passphrase", true}, {"secret", true}, {"client_secret", true}, {"clientSecret", true},
		{"token", true}, {"accessToken", true}, {"refresh_token", true}, {"Authorization", true},
		{"proxy-authorization", true}, {"cookie", true}, {"Set-Cookie", true}, {"credentials", true},
		{"key", true}, {"keys", true}, {"apikey", true}, {"APIKEY", true}, {"api_key", true},
		{"apiKey", true}, {"APIKey", true}, {"X-API-Key", true}, {"private_key", true},
		{"privateKey", true}, {"sshKeys", true}, {"aes256key", true}, {"auth", true},
		{"x_auth", true}, {"bearer", true}, {"sort_key", true}, {"session_id", true},
		{"sessionCookie", true}, {"pin", true}, {"card_pin", true}, {"otp", true}, {"OTPCode", true},
		// kept (controls and false-positive traps)
		{"path", false}, {"keyboard", false}, {"keyword", false}, {"monkey", false},
		{"Monkeys", false}, {"donkey", false}, {"turkey", false}, {"hockey", false},
		{"author", false}, {"content", false}, {"name", false}, {"recursive", false},
		{"keystroke_count", false}, {"spinner", false}, {"footprint", false}, {"pinned", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := sensitiveName(tc.name, nil); got != tc.want {
			t.Errorf("sensitiveName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		extra []string
		want  string
	}{
		{"control: nothing sensitive", `{"path":"/a","n":1.50,"ok":true,"z":null}`, nil, `{"path":"/a","n":1.50,"ok":true,"z":null}`},
		{"flat", `{"path":"/a","password":"p"}`, nil, `{"path":"/a","password":"[redacted]"}`},
		{"order kept", `{"z":1,"token":"t","a":2}`, nil, `{"z":1,"token":"[redacted]","a":2}`},
		{"object value hidden whole", `{"secret":{"a":[1,2]}}`, nil, `{"secret":"[redacted]"}`},
		{"nested in arrays", `{"a":[{"b":{"api_key":"k"}},3]}`, nil, `{"a":[{"b":{"api_key":"[redacted]"}},3]}`},
		{"top-level array", `[{"cookie":"c"},"x"]`, nil, `[{"cookie":"[redacted]"},"x"]`},
		{"approval_token kept and hidden", `{"approval_token":"g","path":"/a"}`, nil, `{"approval_token":"[redacted]","path":"/a"}`},
		{"approval_token kept nested, any case", `{"x":{"Approval_Token":"g"}}`, nil, `{"x":{"Approval_Token":"[redacted]"}}`},
		{"escaped key still matched", `{"pass\u0077ord":"p"}`, nil, `{"password":"[redacted]"}`},
		{"duplicate keys both hidden", `{"token":"a","token":"b"}`, nil, `{"token":"[redacted]","token":"[redacted]"}`},
		{"extra names (unknown to the common list)", `{"iban":"DE89","Recipient_IBAN":"5","ibanx":"x"}`, []string{"iban", "recipient_iban"}, `{"iban":"[redacted]","Recipient_IBAN":"[redacted]","ibanx":"x"}`},
		{"scalar as is", `"hello"`, nil, `"hello"`},
		{"number as is", `12`, nil, `12`},
		{"invalid json", `{"password":"p"`, nil, `"[unparseable]"`},
		{"trailing garbage", `{"a":1} {"password":"p"}`, nil, `"[unparseable]"`},
		{"whitespace only", `  `, nil, `"[unparseable]"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Redact(json.RawMessage(tc.in), tc.extra)
			if string(got) != tc.want {
				t.Fatalf("Redact(%s) = %s, want %s", tc.in, got, tc.want)
			}
			if !json.Valid(got) {
				t.Fatalf("Redact returned invalid JSON %s", got)
			}
		})
	}
	if got := Redact(nil, nil); got != nil {
		t.Fatalf("Redact(nil) = %s", got)
	}
}

func TestRedactDeepNesting(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat(`}`, 20000)
	if got := string(Redact(json.RawMessage(deep), nil)); got != `"[unparseable]"` {
		t.Fatalf("over-deep input not refused: %.40s", got)
	}
	ok := strings.Repeat(`[`, 500) + `{"token":"t"}` + strings.Repeat(`]`, 500)
	if got := string(Redact(json.RawMessage(ok), nil)); strings.Contains(got, `"t"`) {
		t.Fatal("secret survived moderate nesting")
	}
}

// A plan may copy a secret argument into its text in any of the usual
// renderings; each of them is cut, and the rest of the text is kept.
func TestSecretsText(t *testing.T) {
	long := "-----BEGIN KEY-----" + strings.Repeat("QUJDRA", 40) + "-----END KEY-----"
	args := json.RawMessage(`{"path":"/srv/a.txt","password":"hunter2 \"x\"\n","nested":{"api_key":"k-123456"},` +
		`"credentials":{"user":"root","pin":4711},"private_key":` + strconv.Quote(long) + `,"ok":true,"token":true}`)
	s := FindSecrets(args, []string{"path2"})
	if s.Empty() {
		t.Fatal("no secrets found")
	}
	tests := []struct{ in, want string }{
		{"Log in with hunter2 \"x\"\n now", "Log in with [redacted] now"},
		{`pw = "hunter2 \"x\"\n"`, `pw = [redacted]`},                                            // %q and JSON
		{"pw = " + prompt.Quote("hunter2 \"x\"\n"), `pw = [redacted]`},                           // prompt.Quote
		{"key " + prompt.Quote(long), `key [redacted]`},                                          // prompt.Quote cut in the middle
		{`creds {"user":"root","pin":4711}`, `creds [redacted]`},                                 // object whole
		{"user root, pin 4711, key k-123456", "user [redacted], pin [redacted], key [redacted]"}, // leaves
		{"delete /srv/a.txt (true)", "delete /srv/a.txt (true)"},                                 // control: not secret
	}
	for _, tc := range tests {
		if got := s.Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Control: no sensitive field, nothing changes.
	none := FindSecrets(json.RawMessage(`{"path":"hunter2","n":4711}`), nil)
	if !none.Empty() || none.Text("hunter2 4711") != "hunter2 4711" {
		t.Fatal("a call without sensitive fields had text redacted")
	}
	if got := FindSecrets(json.RawMessage(`{"iban":"zz9"}`), []string{"IBAN"}).Text("a zz9 b"); got != "a [redacted] b" {
		t.Fatalf("extra name: %q", got)
	}
}
