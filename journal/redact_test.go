package journal

import (
	"encoding/json"
	"strings"
	"testing"
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
		{"x_auth", true}, {"bearer", true}, {"sort_key", true},
		// kept (controls and false-positive traps)
		{"path", false}, {"keyboard", false}, {"keyword", false}, {"monkey", false},
		{"Monkeys", false}, {"donkey", false}, {"turkey", false}, {"hockey", false},
		{"author", false}, {"content", false}, {"name", false}, {"recursive", false},
		{"keystroke_count", false}, {"", false},
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
		{"extra names", `{"pin":"1234","PIN2":"5","spin":"x"}`, []string{"pin", "pin2"}, `{"pin":"[redacted]","PIN2":"[redacted]","spin":"x"}`},
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
