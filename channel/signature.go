package channel

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/wire"
)

// SignatureHeader carries the webhook signature:
//
//	Mcpsafe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
const SignatureHeader = "Mcpsafe-Signature"

// MinSecretLen is the shortest HMAC secret accepted anywhere in this package.
const MinSecretLen = 32

// ErrSignature is wrapped by every signature verification failure.
var ErrSignature = errors.New("channel: signature rejected")

// Sign returns the Mcpsafe-Signature header value for body at time t.
func Sign(secret, body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifySignature checks a Mcpsafe-Signature header against body. It
// rejects a malformed header, a timestamp further than tolerance from now
// in either direction (a replay of an old request, or a clock far ahead),
// and a MAC that does not match (compared in constant time). Several v1
// entries are allowed so a sender can sign with an old and a new secret
// while keys rotate; unknown keys are ignored for the same reason. Replays
// inside the window are the receiver's job: remember what the signature
// covers, the timestamp and the MAC that matched (not the header text,
// which an attacker can vary with extra elements), until it falls out of
// the window.
func VerifySignature(header string, body []byte, secret []byte, now time.Time, tolerance time.Duration) error {
	_, err := VerifySignatureKey(header, body, secret, now, tolerance)
	return err
}

// VerifySignatureKey is VerifySignature that also returns the replay key:
// what the signature covers, the timestamp and the MAC that matched. Two
// headers that differ only in extra elements, their order, or other v1
// entries carry the same key, so a receiver that remembers keys (not
// header text) sees them as the one replay they are.
func VerifySignatureKey(header string, body []byte, secret []byte, now time.Time, tolerance time.Duration) (replayKey string, err error) {
	if len(secret) < MinSecretLen {
		return "", fmt.Errorf("%w: secret is %d bytes, need at least %d", ErrSignature, len(secret), MinSecretLen)
	}
	if tolerance <= 0 {
		return "", fmt.Errorf("%w: tolerance must be positive", ErrSignature)
	}
	ts, sigs, err := parseSignature(header)
	if err != nil {
		return "", err
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: timestamp %q is not a number", ErrSignature, ts)
	}
	skew := now.Sub(time.Unix(sec, 0))
	if skew > tolerance {
		return "", fmt.Errorf("%w: timestamp is %s old, outside the %s window", ErrSignature, skew.Truncate(time.Second), tolerance)
	}
	if skew < -tolerance {
		return "", fmt.Errorf("%w: timestamp is %s in the future, outside the %s window", ErrSignature, (-skew).Truncate(time.Second), tolerance)
	}
	want := mac(secret, ts, body)
	ok := false
	for _, s := range sigs {
		ok = wire.SecretEqual(want, s) || ok // no early exit: every entry is compared
	}
	if !ok {
		return "", fmt.Errorf("%w: signature does not match", ErrSignature)
	}
	return ts + "." + hex.EncodeToString(want), nil
}

// parseSignature splits the header strictly: exactly one t made of ASCII
// digits, at least one v1 of 64 lowercase hex digits.
func parseSignature(header string) (ts string, sigs [][]byte, err error) {
	if header == "" {
		return "", nil, fmt.Errorf("%w: missing %s header", ErrSignature, SignatureHeader)
	}
	if len(header) > 1024 {
		return "", nil, fmt.Errorf("%w: header too long", ErrSignature)
	}
	seenT := false
	for _, part := range strings.Split(header, ",") {
		k, v, found := strings.Cut(part, "=")
		if !found || k == "" || strings.Trim(k, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			return "", nil, fmt.Errorf("%w: malformed element %q", ErrSignature, part)
		}
		switch k {
		case "t":
			if seenT {
				return "", nil, fmt.Errorf("%w: more than one timestamp", ErrSignature)
			}
			seenT = true
			if v == "" || len(v) > 12 || strings.Trim(v, "0123456789") != "" {
				return "", nil, fmt.Errorf("%w: timestamp %q is not unix seconds", ErrSignature, v)
			}
			ts = v
		case "v1":
			if len(v) != 64 || strings.Trim(v, "0123456789abcdef") != "" {
				return "", nil, fmt.Errorf("%w: v1 is not 64 lowercase hex digits", ErrSignature)
			}
			b, _ := hex.DecodeString(v)
			sigs = append(sigs, b)
		}
	}
	if !seenT {
		return "", nil, fmt.Errorf("%w: no timestamp", ErrSignature)
	}
	if len(sigs) == 0 {
		return "", nil, fmt.Errorf("%w: no v1 signature", ErrSignature)
	}
	return ts, sigs, nil
}

// LoadSecretFile reads an HMAC secret: one line holding the standard
// base64 encoding of at least 32 bytes. The file must not be readable by
// group or others: anyone who can read it can approve.
func LoadSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("channel: secret file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("channel: secret file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("channel: secret file %s is not a regular file", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("channel: secret file %s has mode %04o; it must not be readable by group or others (chmod 600)", path, st.Mode().Perm())
	}
	buf, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return nil, fmt.Errorf("channel: secret file %s: %w", path, err)
	}
	if len(buf) > 4096 {
		return nil, fmt.Errorf("channel: secret file %s is too long for a secret", path)
	}
	text := string(buf)
	text = strings.TrimSuffix(text, "\n")
	text = strings.TrimSuffix(text, "\r")
	if strings.ContainsAny(text, "\r\n \t") {
		return nil, fmt.Errorf("channel: secret file %s must hold exactly one line of base64; %s", path, makeSecret(path))
	}
	secret, err := base64.StdEncoding.Strict().DecodeString(text)
	if err != nil {
		return nil, fmt.Errorf("channel: secret file %s is not base64 (%w); %s", path, err, makeSecret(path))
	}
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("channel: secret in %s is %d bytes, need at least %d; %s", path, len(secret), MinSecretLen, makeSecret(path))
	}
	return secret, nil
}

// makeSecret says how to make a good secret file: the same file (or a
// copy) then goes to the approval service and to every gated server.
func makeSecret(path string) string {
	return fmt.Sprintf("make one with: head -c 32 /dev/urandom | base64 > %s && chmod 600 %s (and give the gated servers the same file)", path, path)
}
