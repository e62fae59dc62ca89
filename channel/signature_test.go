package channel

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type sigVector struct {
	Name   string `json:"name"`
	Secret string `json:"secret_base64"`
	T      int64  `json:"t"`
	Body   string `json:"body"`
	Header string `json:"header"`
}

// The vectors were computed independently (Python hmac, checked with
// openssl dgst -mac HMAC); the first one is the worked example in
// docs/USAGE.md (channel approvals).
func TestSignatureVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/signature-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vecs []sigVector
	if err := json.Unmarshal(raw, &vecs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vecs {
		t.Run(v.Name, func(t *testing.T) {
			secret, _ := base64.StdEncoding.DecodeString(v.Secret)
			at := time.Unix(v.T, 0)
			if got := Sign(secret, []byte(v.Body), at); got != v.Header {
				t.Fatalf("Sign = %s, want %s", got, v.Header)
			}
			if err := VerifySignature(v.Header, []byte(v.Body), secret, at.Add(30*time.Second), time.Minute); err != nil {
				t.Fatalf("VerifySignature: %v", err)
			}
		})
	}
}

func TestVerifySignature(t *testing.T) {
	body := []byte(`{"id":"r1","tool":"drop_table"}`)
	now := time.Unix(1767225600, 0)
	good := Sign(testSecret, body, now)
	otherSecret := []byte(strings.Repeat("z", 32))
	v1 := good[strings.Index(good, "v1=")+3:]
	cases := []struct {
		name   string
		header string
		body   []byte
		secret []byte
		now    time.Time
		msg    string // "" = accepted
	}{
		{"control: valid", good, body, testSecret, now, ""},
		{"control: 4m59s old", good, body, testSecret, now.Add(299 * time.Second), ""},
		{"control: rotation, second v1 matches", "t=1767225600,v1=" + strings.Repeat("0", 64) + ",v1=" + v1, body, testSecret, now, ""},
		{"control: unknown element ignored", good + ",v2=whatever", body, testSecret, now, ""},
		{"forged body", good, []byte(`{"id":"r1","tool":"drop_database"}`), testSecret, now, "does not match"},
		{"body with a byte appended", good, append(append([]byte{}, body...), ' '), testSecret, now, "does not match"},
		{"wrong secret", good, body, otherSecret, now, "does not match"},
		{"signed by another secret", Sign(otherSecret, body, now), body, testSecret, now, "does not match"},
		{"stale timestamp", good, body, testSecret, now.Add(6 * time.Minute), "old, outside"},
		{"future timestamp", good, body, testSecret, now.Add(-6 * time.Minute), "in the future"},
		{"timestamp moved, same mac", "t=1767225601,v1=" + v1, body, testSecret, now, "does not match"},
		{"missing header", "", body, testSecret, now, "missing"},
		{"no timestamp", "v1=" + v1, body, testSecret, now, "no timestamp"},
		{"no v1", "t=1767225600", body, testSecret, now, "no v1"},
		{"two timestamps", "t=1767225600,t=1767225600,v1=" + v1, body, testSecret, now, "more than one timestamp"},
		{"negative timestamp", "t=-1767225600,v1=" + v1, body, testSecret, now, "not unix seconds"},
		{"plus sign", "t=+1767225600,v1=" + v1, body, testSecret, now, "not unix seconds"},
		{"uppercase hex", "t=1767225600,v1=" + strings.ToUpper(v1), body, testSecret, now, "lowercase hex"},
		{"short mac", "t=1767225600,v1=" + v1[:62], body, testSecret, now, "64 lowercase hex"},
		{"spaces", "t=1767225600, v1=" + v1, body, testSecret, now, "malformed"},
		{"short secret", good, body, testSecret[:16], now, "need at least 32"},
		{"huge header", "t=1," + strings.Repeat("x=y,", 400) + "v1=" + v1, body, testSecret, now, "too long"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifySignature(tc.header, tc.body, tc.secret, tc.now, 5*time.Minute)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("rejected a valid signature: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want ErrSignature mentioning %q", err, tc.msg)
			}
		})
	}
	if err := VerifySignature(good, body, testSecret, now, 0); err == nil {
		t.Fatal("a zero tolerance was accepted")
	}
}

func TestLoadSecretFile(t *testing.T) {
	dir := t.TempDir()
	good := base64.StdEncoding.EncodeToString(testSecret)
	cases := []struct {
		name    string
		content string
		mode    os.FileMode
		msg     string // "" = loads
	}{
		{"control: one line", good + "\n", 0o600, ""},
		{"control: no newline", good, 0o400, ""},
		{"control: CRLF", good + "\r\n", 0o600, ""},
		{"group readable", good + "\n", 0o640, "must not be readable"},
		{"world readable", good + "\n", 0o604, "must not be readable"},
		{"31 bytes", base64.StdEncoding.EncodeToString(testSecret[:31]) + "\n", 0o600, "31 bytes, need at least 32"},
		{"not base64", "this-is-not-base64!\n", 0o600, "not base64"},
		{"raw url base64", base64.RawURLEncoding.EncodeToString(testSecret), 0o600, "not base64"},
		{"two lines", good + "\n" + good + "\n", 0o600, "exactly one line"},
		{"leading space", " " + good, 0o600, "exactly one line"},
		{"empty", "", 0o600, "0 bytes"},
		{"too long", strings.Repeat("A", 5000), 0o600, "too long"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "s"+string(rune('a'+i)))
			if err := os.WriteFile(p, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			got, err := LoadSecretFile(p)
			if tc.msg == "" {
				if err != nil || string(got) != string(testSecret) {
					t.Fatalf("got %q, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %q", err, tc.msg)
			}
		})
	}
	if _, err := LoadSecretFile(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing file loaded")
	}
	if _, err := LoadSecretFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory: %v", err)
	}
}
