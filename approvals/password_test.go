package approvals

import (
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustHash(t *testing.T, pw string) string {
	t.Helper()
	h, err := HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestPasswordHash(t *testing.T) {
	const pw = "alice-token-0123456789"
	h := mustHash(t, pw)
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(h, pw) {
		t.Fatalf("hash %q: want argon2id PHC without the password", h)
	}
	if h2 := mustHash(t, pw); h2 == h {
		t.Fatal("two hashes of one password are equal: the salt is not fresh")
	}
	if !VerifyPassword(h, pw) {
		t.Fatal("control: the right password does not verify")
	}
	parts := strings.Split(h, "$")
	otherSalt := strings.Join(append(parts[:4:4], "AAAAAAAAAAAAAAAAAAAAAA", parts[5]), "$")
	for name, tc := range map[string]struct{ hash, pw string }{
		"wrong password":      {h, "alice-token-0123456788"},
		"empty password":      {h, ""},
		"prefix of password":  {h, pw[:len(pw)-1]},
		"salt altered":        {otherSalt, pw},
		"bcrypt hash":         {"$2a$10$abcdefghijklmnopqrstuuJ0P4oIhW0E4eAHRQZ1p0fZ0jF8Y9a2", pw},
		"argon2i not id":      {strings.Replace(h, "argon2id", "argon2i", 1), pw},
		"old version":         {strings.Replace(h, "v=19", "v=16", 1), pw},
		"memory beyond bound": {strings.Replace(h, "m=19456", "m=4294967295", 1), pw},
		"zero passes":         {strings.Replace(h, "t=2", "t=0", 1), pw},
		"params reordered":    {strings.Replace(h, "m=19456,t=2", "t=2,m=19456", 1), pw},
		"truncated":           {h[:len(h)-10], pw},
		"plain text":          {pw, pw},
	} {
		if VerifyPassword(tc.hash, tc.pw) {
			t.Errorf("%s: verified", name)
		}
	}
	if _, err := HashPassword("short"); err == nil {
		t.Error("a password shorter than MinTokenLen was hashed")
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "approvers")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A file holding a password in plain text is refused, and the message says
// how to convert it without echoing the password.
func TestApproversFileRefusesPlainText(t *testing.T) {
	const secret = "bob-token-0123456789ab"
	p := writeFile(t, "alice:"+mustHash(t, "alice-token-0123456789")+"\nbob:"+secret+"\n")
	_, err := LoadApproversFile(p)
	if !errors.Is(err, ErrPlainPassword) {
		t.Fatalf("plain-text entry: %v, want ErrPlainPassword", err)
	}
	for _, want := range []string{"line 2", "bob", "mcpsafe approvals passwd --approvers-file " + p + " --convert"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("message echoes the password: %q", err)
	}

	// Control: the same file converted loads, and each password verifies.
	n, err := ConvertApproversFile(p)
	if err != nil || n != 1 {
		t.Fatalf("convert: %d, %v", n, err)
	}
	list, err := LoadApproversFile(p)
	if err != nil || len(list) != 2 || !VerifyPassword(list[1].Hash, secret) || list[1].Token != "" {
		t.Fatalf("after convert: %+v, %v", list, err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("converted file has mode %04o", st.Mode().Perm())
	}
	if n, err := ConvertApproversFile(p); n != 0 || err != nil {
		t.Errorf("second convert: %d, %v; want nothing to do", n, err)
	}
}

func TestSetPassword(t *testing.T) {
	p := filepath.Join(t.TempDir(), "approvers")
	if err := SetPassword(p, "alice", "alice-first-0123456789"); err != nil {
		t.Fatal(err)
	}
	if err := SetPassword(p, "bob", "bob-token-0123456789ab"); err != nil {
		t.Fatal(err)
	}
	// Same identity spelled differently replaces the entry, never adds one.
	if err := SetPassword(p, "user:ALICE", "alice-second-012345678"); err == nil {
		t.Fatal("a name with a colon was accepted as a file entry")
	}
	if err := SetPassword(p, "ALICE", "alice-second-012345678"); err != nil {
		t.Fatal(err)
	}
	list, err := LoadApproversFile(p)
	if err != nil || len(list) != 2 {
		t.Fatalf("%+v, %v", list, err)
	}
	if VerifyPassword(list[0].Hash, "alice-first-0123456789") || !VerifyPassword(list[0].Hash, "alice-second-012345678") {
		t.Error("the old password still verifies, or the new one does not")
	}
	if err := SetPassword(p, "carol", "short"); err == nil {
		t.Error("a short password was stored")
	}
}

// Login and the JSON API against hashed approvers: the right password
// works (also the second time, from memory), a wrong one never does.
func TestHashedApproverLogin(t *testing.T) {
	const alicePW, bobPW = "alice-token-0123456789", "bob-token-0123456789ab"
	e := newEnv(t, ServiceOptions{Approvers: []Approver{
		{Name: "alice", Hash: mustHash(t, alicePW)},
		{Name: "bob", Hash: mustHash(t, bobPW)},
	}})
	bearer := func(tok string) int {
		req, _ := http.NewRequest("GET", e.srv.URL+"/api/requests", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := 0; i < 2; i++ {
		if code := bearer(bobPW); code != 200 {
			t.Fatalf("control: bob's token (try %d): HTTP %d", i, code)
		}
	}
	for _, tok := range []string{alicePW + "x", bobPW[:len(bobPW)-1], mustHash(t, bobPW)} {
		if code := bearer(tok); code != 401 {
			t.Errorf("token %q: HTTP %d, want 401", tok, code)
		}
	}
	login := func(name, pw string) int {
		jar, _ := cookiejar.New(nil)
		b := &browser{Client: &http.Client{Jar: jar}, base: e.srv.URL}
		code, _ := b.post("/login", url.Values{"name": {name}, "password": {pw}}, e.srv.URL)
		return code
	}
	if code := login("alice", alicePW); code != 200 {
		t.Fatalf("control: alice's login: HTTP %d", code)
	}
	// bob's password is known to the service now; it still only opens bob.
	if code := login("alice", bobPW); code != 401 {
		t.Errorf("alice with bob's password: HTTP %d, want 401", code)
	}
	if code := login("bob", alicePW); code != 401 {
		t.Errorf("bob with alice's password: HTTP %d, want 401", code)
	}
}
