package approvals

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// Password hashes are argon2id in the PHC string format
//
//	$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt b64>$<hash b64>
//
// so that a stolen approvers file does not give anyone a login. The
// parameters are OWASP's argon2id minimum (19 MiB, 2 passes, 1 lane): a
// login costs tens of milliseconds on a small machine.
const (
	hashPrefix  = "$argon2id$"
	argonMemory = 19 * 1024
	argonTime   = 2
	argonLanes  = 1
	argonKeyLen = 32
	argonSalt   = 16

	// A hash from a file may ask for any cost; these bounds keep one
	// login from taking the machine's memory or minutes of CPU.
	maxArgonMemory = 1 << 20 // 1 GiB in KiB
	maxArgonTime   = 16
	maxArgonLanes  = 16
)

// ErrPlainPassword marks an approvers file entry that holds a password
// rather than its hash.
var ErrPlainPassword = errors.New("channel: plain-text password")

// HashPassword returns the argon2id hash of password in PHC format, with a
// fresh random salt. Passwords shorter than MinTokenLen are refused.
func HashPassword(password string) (string, error) {
	if len(password) < MinTokenLen {
		return "", fmt.Errorf("channel: password shorter than %d characters", MinTokenLen)
	}
	salt := make([]byte, argonSalt)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("channel: no randomness: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonLanes, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("%sv=%d$m=%d,t=%d,p=%d$%s$%s", hashPrefix, argon2.Version, argonMemory, argonTime, argonLanes,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// IsPasswordHash reports whether s looks like a hash HashPassword made.
func IsPasswordHash(s string) bool { return strings.HasPrefix(s, hashPrefix) }

type argonHash struct {
	mem, time uint32
	lanes     uint8
	salt, key []byte
}

// parseHash reads a PHC argon2id string strictly; any deviation is an
// error, never a weaker check.
func parseHash(s string) (argonHash, error) {
	var h argonHash
	parts := strings.Split(s, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return h, errors.New("channel: not an argon2id hash")
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return h, fmt.Errorf("channel: argon2id version %q not supported", parts[2])
	}
	params := strings.Split(parts[3], ",")
	if len(params) != 3 {
		return h, errors.New("channel: argon2id parameters must be m=,t=,p=")
	}
	num := func(p, key string, max uint64) (uint64, error) {
		v, ok := strings.CutPrefix(p, key+"=")
		if !ok {
			return 0, fmt.Errorf("channel: argon2id parameter %q: want %s=N", p, key)
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n < 1 || n > max {
			return 0, fmt.Errorf("channel: argon2id parameter %s=%s out of range 1..%d", key, v, max)
		}
		return n, nil
	}
	m, err := num(params[0], "m", maxArgonMemory)
	if err != nil {
		return h, err
	}
	t, err := num(params[1], "t", maxArgonTime)
	if err != nil {
		return h, err
	}
	p, err := num(params[2], "p", maxArgonLanes)
	if err != nil {
		return h, err
	}
	b64 := base64.RawStdEncoding.Strict()
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return h, errors.New("channel: argon2id salt is not base64 of at least 8 bytes")
	}
	key, err := b64.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 64 {
		return h, errors.New("channel: argon2id hash is not base64 of 16 to 64 bytes")
	}
	return argonHash{mem: uint32(m), time: uint32(t), lanes: uint8(p), salt: salt, key: key}, nil
}

// matches reports whether password hashes to h, comparing in constant time.
func (h argonHash) matches(password string) bool {
	got := argon2.IDKey([]byte(password), h.salt, h.time, h.mem, h.lanes, uint32(len(h.key)))
	return subtle.ConstantTimeCompare(got, h.key) == 1
}

// VerifyPassword reports whether password matches the PHC argon2id hash.
// A malformed hash never matches.
func VerifyPassword(hash, password string) bool {
	h, err := parseHash(hash)
	if err != nil {
		return false
	}
	return h.matches(password)
}
