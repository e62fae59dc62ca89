package seal

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

const aud = "files@host-a"

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func mustRing(t testing.TB, keys ...[]byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustSeal(t testing.TB, k *Keyring, audience string, p []byte) string {
	t.Helper()
	s, err := k.Seal(audience, p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sealedKeyID reads the key id out of a sealed value without verifying it.
func sealedKeyID(t *testing.T, sealed string) string {
	t.Helper()
	raw, err := b64.DecodeString(sealed)
	if err != nil || len(raw) < 1+idLen {
		t.Fatalf("not a sealed value: %q", sealed)
	}
	return hex.EncodeToString(raw[1 : 1+idLen])
}

func wantInvalid(t *testing.T, k *Keyring, audience, sealed, what string) {
	t.Helper()
	p, err := k.Open(audience, sealed)
	if err != ErrInvalid || p != nil {
		t.Fatalf("%s: Open = %q, %v; want nil, ErrInvalid", what, p, err)
	}
}

func TestRoundTrip(t *testing.T) {
	k := mustRing(t, testKey(1))
	for _, p := range [][]byte{{}, []byte("x"), []byte(`{"tool":"delete_file","nonce":"..."}`), bytes.Repeat([]byte{0xff}, 8000)} {
		s := mustSeal(t, k, aud, p)
		if strings.ContainsAny(s, "=+/\n") {
			t.Fatalf("not unpadded base64url: %q", s)
		}
		got, err := k.Open(aud, s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, p) || got == nil {
			t.Fatalf("round trip: got %q, want %q", got, p)
		}
	}
}

func TestSealIsRandomized(t *testing.T) {
	k := mustRing(t, testKey(1))
	a, b := mustSeal(t, k, aud, []byte("same")), mustSeal(t, k, aud, []byte("same"))
	if a == b {
		t.Fatal("two seals of the same plaintext are identical: nonce reuse")
	}
}

func TestFlipEveryDecodedByte(t *testing.T) {
	k := mustRing(t, testKey(1))
	s := mustSeal(t, k, aud, []byte(`{"tool":"delete_file","args":"cache.txt"}`))
	raw, err := b64.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			m := bytes.Clone(raw)
			m[i] ^= mask
			wantInvalid(t, k, aud, b64.EncodeToString(m), "flipped byte")
		}
	}
	if _, err := k.Open(aud, s); err != nil {
		t.Fatalf("control: untouched value refused: %v", err)
	}
}

func TestAlterEveryEncodedCharacter(t *testing.T) {
	k := mustRing(t, testKey(1))
	s := mustSeal(t, k, aud, []byte("grant"))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/ .\x00\n"
	for i := range len(s) {
		for _, c := range []byte(alphabet) {
			if c == s[i] {
				continue
			}
			m := s[:i] + string(c) + s[i+1:]
			wantInvalid(t, k, aud, m, "altered character")
		}
	}
}

func TestNonCanonicalEncodingRefused(t *testing.T) {
	k := mustRing(t, testKey(1))
	s := mustSeal(t, k, aud, []byte("grant!")) // 43 bytes sealed: 4 unused bits at the end
	raw, _ := b64.DecodeString(s)
	cases := map[string]string{
		"appended A":       s + "A",
		"appended char":    s + "x",
		"appended padding": s + "=",
		"padded":           base64.URLEncoding.EncodeToString(raw),
		"leading space":    " " + s,
		"trailing newline": s + "\n",
		"inner newline":    s[:10] + "\n" + s[10:],
		"inner CR":         s[:10] + "\r" + s[10:],
		"prefixed":         "v1." + s,
	}
	// The standard alphabet differs only where the value has '-' or '_';
	// the nonce is random, so check only when it does.
	if std := base64.RawStdEncoding.EncodeToString(raw); std != s {
		cases["std alphabet"] = std
	}
	// Altered trailing bits: the last character carries unused low bits
	// whenever the length is not a multiple of 3.
	if len(raw)%3 != 0 {
		last := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", s[len(s)-1])
		alt := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[last|1]
		cases["trailing bits"] = s[:len(s)-1] + string(alt)
	} else {
		t.Fatalf("test setup: pick a plaintext length whose sealed length is not a multiple of 3 (got %d)", len(raw))
	}
	for name, m := range cases {
		wantInvalid(t, k, aud, m, name)
	}
}

func TestTruncatedAtEveryLength(t *testing.T) {
	k := mustRing(t, testKey(1))
	s := mustSeal(t, k, aud, []byte("grant with some length to it"))
	for n := range len(s) {
		wantInvalid(t, k, aud, s[:n], "truncated")
		wantInvalid(t, k, aud, s[len(s)-n:], "head cut")
	}
}

func TestEmptyAndHuge(t *testing.T) {
	k := mustRing(t, testKey(1))
	wantInvalid(t, k, aud, "", "empty")
	huge := strings.Repeat("A", 1<<20)
	wantInvalid(t, k, aud, huge, "1 MiB")
	wantInvalid(t, k, aud, strings.Repeat("A", MaxSealedLen+1), "just over the limit")
	// Seal refuses what Open would refuse, and accepts the largest that fits.
	if _, err := k.Seal(aud, make([]byte, MaxSealedLen)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("Seal of oversize plaintext: %v", err)
	}
	maxPlain := MaxSealedLen*3/4 - headerLen - tagLen
	s := mustSeal(t, k, aud, make([]byte, maxPlain))
	if len(s) > MaxSealedLen {
		t.Fatalf("sealed %d bytes, over the limit", len(s))
	}
	if _, err := k.Open(aud, s); err != nil {
		t.Fatalf("largest sealable value refused: %v", err)
	}
}

func TestWrongKeyAndAudience(t *testing.T) {
	a := mustRing(t, testKey(1))
	b := mustRing(t, testKey(2))
	s := mustSeal(t, a, aud, []byte("grant"))
	wantInvalid(t, b, aud, s, "other key (unknown key id)")
	for _, other := range []string{"", "files@host-b", aud + " ", strings.ToUpper(aud), aud[:len(aud)-1]} {
		wantInvalid(t, a, other, s, "audience "+other)
	}
	if _, err := a.Open(aud, s); err != nil {
		t.Fatalf("control: right key and audience refused: %v", err)
	}
}

// A forged value that carries a known key id but was made with another key
// must still fail authentication.
func TestKnownKeyIDOtherKey(t *testing.T) {
	good := mustRing(t, testKey(1))
	evil := mustRing(t, testKey(2))
	s := mustSeal(t, evil, aud, []byte("grant"))
	raw, _ := b64.DecodeString(s)
	id := keyID(testKey(1))
	copy(raw[1:], id[:])
	wantInvalid(t, good, aud, b64.EncodeToString(raw), "forged key id")
}

func TestUnknownVersion(t *testing.T) {
	k := mustRing(t, testKey(1))
	s := mustSeal(t, k, aud, []byte("grant"))
	raw, _ := b64.DecodeString(s)
	for _, v := range []byte{0, 2, 0xff} {
		raw[0] = v
		wantInvalid(t, k, aud, b64.EncodeToString(raw), "version")
	}
}

func TestRotation(t *testing.T) {
	oldKey, newKey := testKey(1), testKey(2)
	before := mustRing(t, oldKey)
	issued := mustSeal(t, before, aud, []byte("old grant"))

	after := mustRing(t, newKey, oldKey)
	if p, err := after.Open(aud, issued); err != nil || string(p) != "old grant" {
		t.Fatalf("old key no longer opens after rotation: %q, %v", p, err)
	}
	fresh := mustSeal(t, after, aud, []byte("new grant"))
	ids := after.KeyIDs()
	if len(ids) != 2 || sealedKeyID(t, fresh) != ids[0] || ids[0] == ids[1] {
		t.Fatalf("sealed with key id %s, want newest %v", sealedKeyID(t, fresh), ids)
	}
	if sealedKeyID(t, issued) != ids[1] {
		t.Fatalf("old value key id %s, want %s", sealedKeyID(t, issued), ids[1])
	}
	wantInvalid(t, before, aud, fresh, "old ring, new key")
	// Retiring the old key retires its values.
	wantInvalid(t, mustRing(t, newKey), aud, issued, "retired key")
}

func TestKeyIDsDoNotRevealKey(t *testing.T) {
	key := testKey(7)
	id := mustRing(t, key).KeyIDs()[0]
	if len(id) != 2*idLen || strings.Contains(hex.EncodeToString(key), id) {
		t.Fatalf("key id %s looks like the key", id)
	}
	if again := mustRing(t, key).KeyIDs()[0]; again != id {
		t.Fatal("key id is not stable")
	}
}

func TestNewKeyringRefuses(t *testing.T) {
	cases := []struct {
		name string
		keys [][]byte
		want error
	}{
		{"none", nil, ErrNoKey},
		{"empty key", [][]byte{{}}, ErrWeakKey},
		{"16 bytes (AES-128)", [][]byte{make([]byte, 16)}, ErrWeakKey},
		{"24 bytes", [][]byte{testKey(1)[:24]}, ErrWeakKey},
		{"31 bytes", [][]byte{testKey(1)[:31]}, ErrWeakKey},
		{"33 bytes", [][]byte{append(testKey(1), 1)}, ErrWeakKey},
		{"all zero", [][]byte{make([]byte, KeySize)}, ErrWeakKey},
		{"all zero second", [][]byte{testKey(1), make([]byte, KeySize)}, ErrWeakKey},
		{"duplicate", [][]byte{testKey(1), testKey(2), testKey(1)}, ErrDuplicateKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, err := NewKeyring(c.keys...)
			if !errors.Is(err, c.want) || k != nil {
				t.Fatalf("NewKeyring = %v, %v; want %v", k, err, c.want)
			}
		})
	}
	// Control: a key with a zero byte or two is fine.
	k := make([]byte, KeySize)
	k[31] = 1
	mustRing(t, k, testKey(2))
}

func TestNewKeyringCopiesKeys(t *testing.T) {
	key := testKey(3)
	k := mustRing(t, key)
	s := mustSeal(t, k, aud, []byte("grant"))
	clear(key)
	if _, err := k.Open(aud, s); err != nil {
		t.Fatalf("wiping the caller's slice broke the ring: %v", err)
	}
}

func TestRandomKeyring(t *testing.T) {
	a, err := RandomKeyring()
	if err != nil {
		t.Fatal(err)
	}
	b, err := RandomKeyring()
	if err != nil {
		t.Fatal(err)
	}
	if a.KeyIDs()[0] == b.KeyIDs()[0] {
		t.Fatal("two random keyrings share a key")
	}
	s := mustSeal(t, a, aud, []byte("grant"))
	wantInvalid(t, b, aud, s, "other process")
	if _, err := a.Open(aud, s); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentUse(t *testing.T) {
	k := mustRing(t, testKey(1), testKey(2))
	done := make(chan error, 8)
	for range 8 {
		go func() {
			for range 200 {
				s, err := k.Seal(aud, []byte("grant"))
				if err == nil {
					_, err = k.Open(aud, s)
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkSealOpen(b *testing.B) {
	k := mustRing(b, testKey(1))
	p := bytes.Repeat([]byte("g"), 300) // about the size of a grant
	for b.Loop() {
		s, err := k.Seal(aud, p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := k.Open(aud, s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenRefusesHuge(b *testing.B) {
	k := mustRing(b, testKey(1))
	huge := strings.Repeat("A", 1<<20)
	for b.Loop() {
		if _, err := k.Open(aud, huge); err != ErrInvalid {
			b.Fatal(err)
		}
	}
}

func TestZeroKeyringFailsClosed(t *testing.T) {
	var zero Keyring
	if _, err := zero.Seal(aud, []byte("x")); !errors.Is(err, ErrNoKey) {
		t.Fatalf("zero Keyring sealed: %v", err)
	}
	var nilRing *Keyring
	if _, err := nilRing.Seal(aud, []byte("x")); !errors.Is(err, ErrNoKey) {
		t.Fatalf("nil Keyring sealed: %v", err)
	}
	s := mustSeal(t, mustRing(t, testKey(1)), aud, []byte("x"))
	wantInvalid(t, &zero, aud, s, "zero Keyring")
	wantInvalid(t, nilRing, aud, s, "nil Keyring")
	if ids := nilRing.KeyIDs(); ids != nil {
		t.Fatal(ids)
	}
}
