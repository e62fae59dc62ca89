package approvals

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// Approver is one person or bot allowed to decide. Its secret is the
// password for the login form and the bearer token for the JSON API, given
// either as Hash (argon2id, HashPassword; what an approvers file holds) or
// as Token (the secret itself, for approvers built in code). Exactly one
// of the two is set.
type Approver struct {
	Name  string
	Token string
	Hash  string
	// Slack is the approver's Slack user id (U0123ABCD), when a click in
	// Slack may decide as this approver (SlackOptions); "" otherwise.
	Slack string
}

// MinTokenLen is the shortest approver token accepted.
const MinTokenLen = 16

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$`)

// LoadApproversFile reads approvers, one "name:hash" per line, the hash an
// argon2id PHC string (HashPassword, `mcpsafe approvals passwd`),
// optionally followed by " slack=U0123ABCD" (the approver's Slack user
// id, for Slack approvals); blank
// lines and lines starting with # are ignored. Like the secret file it
// must not be readable by group or others. Names must be unique. A line
// holding a plain-text password refuses the whole file (ErrPlainPassword):
// a copy of the file must never be a copy of the logins.
func LoadApproversFile(path string) ([]Approver, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("channel: approvers file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("channel: approvers file %s is not a regular file", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("channel: approvers file %s has mode %04o; it must not be readable by group or others (chmod 600)", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("channel: approvers file: %w", err)
	}
	var out []Approver
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, token, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("channel: approvers file %s line %d: want name:token", path, line)
		}
		token, slackID := splitSlackID(token)
		if !IsPasswordHash(token) {
			return nil, fmt.Errorf("%w: approvers file %s line %d (%s) holds a plain-text password; store argon2id hashes instead: run `mcpsafe approvals passwd --approvers-file %s --convert` to hash every plain-text entry in place, or `mcpsafe approvals passwd --approvers-file %s NAME` to set one (it reads the password on stdin)",
				ErrPlainPassword, path, line, prompt.Visible(wire.Clip(name)), path, path)
		}
		out = append(out, Approver{Name: name, Hash: token, Slack: slackID})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("channel: approvers file %s: %w", path, err)
	}
	if err := checkApprovers(out); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return out, nil
}

// splitSlackID splits an approvers-file secret from its optional
// " slack=USERID" tail.
func splitSlackID(secret string) (string, string) {
	s, id, ok := strings.Cut(secret, " slack=")
	if !ok {
		return secret, ""
	}
	return strings.TrimRight(s, " \t"), strings.TrimSpace(id)
}

// slackTail is the " slack=USERID" tail of an approvers-file line, or "".
func slackTail(line string) string {
	if _, id := splitSlackID(strings.TrimSpace(line)); id != "" {
		return " slack=" + id
	}
	return ""
}

func checkApprovers(list []Approver) error {
	if len(list) == 0 {
		return fmt.Errorf("channel: no approvers configured")
	}
	names := map[string]bool{}
	tokens := map[string]bool{}
	slackIDs := map[string]bool{}
	for _, a := range list {
		if a.Slack != "" {
			if !slackUserRE.MatchString(a.Slack) {
				return fmt.Errorf("channel: approver %s: slack=%q is not a Slack user id (U0123ABCD: in Slack, the person's profile, Copy member ID)", a.Name, a.Slack)
			}
			if slackIDs[a.Slack] {
				return fmt.Errorf("channel: approver %s: Slack user %s is mapped to two approvers", a.Name, a.Slack)
			}
			slackIDs[a.Slack] = true
		}
		if !nameRE.MatchString(a.Name) {
			return fmt.Errorf("channel: approver name %q: use letters, digits and ._@+- (at most 64)", a.Name)
		}
		switch {
		case a.Hash != "" && a.Token != "":
			return fmt.Errorf("channel: approver %s: give a token or a hash, not both", a.Name)
		case a.Hash != "":
			if _, err := parseHash(a.Hash); err != nil {
				return fmt.Errorf("channel: approver %s: %v", a.Name, err)
			}
		case len(a.Token) < MinTokenLen:
			return fmt.Errorf("channel: approver %s: token shorter than %d characters", a.Name, MinTokenLen)
		}
		k, err := identity.Key(a.Name)
		if err != nil {
			return fmt.Errorf("channel: approver name %q: %v", a.Name, err)
		}
		if names[k] {
			return fmt.Errorf("channel: approver %s listed twice", a.Name)
		}
		if a.Token != "" && tokens[a.Token] {
			return fmt.Errorf("channel: approver %s shares a token with another approver", a.Name)
		}
		names[k], tokens[a.Token] = true, true
	}
	return nil
}

// authenticator checks credentials and keeps browser sessions.
type authenticator struct {
	approvers []Approver
	hashes    []*argonHash // parsed Hash of approver i; nil for a Token
	// digests of the approvers' tokens, computed once: hashing a stored
	// token at each comparison would take time that depends on its length.
	// For a hashed approver the digest is filled in (known[i]) once its
	// password has been verified with argon2id, so the JSON API does not
	// pay an argon2id run per request; it lives in memory only.
	pwMu     sync.Mutex
	digests  [][sha256.Size]byte
	known    []bool
	sessions sessionStore // the store's: replicas share logins
	ttl      time.Duration
}

type session struct {
	name    string
	csrf    string
	expires time.Time
}

const sessionCookie = "mcpsafe_session"

// byToken compares against every approver in constant time, so the time
// taken does not reveal which entry (or how much of one) matched.
func (a *authenticator) byToken(name, token string) (string, bool) {
	found := ""
	want, nameErr := identity.Key(name)
	presented := sha256.Sum256([]byte(token))
	a.pwMu.Lock()
	defer a.pwMu.Unlock()
	for i, ap := range a.approvers {
		tokOK := a.known[i] && wire.CTCompare(a.digests[i][:], presented[:]) == 1
		have, _ := identity.Key(ap.Name) // checked by checkApprovers
		nameOK := name == "" || (nameErr == nil && have == want)
		if tokOK && nameOK {
			found = ap.Name
		}
	}
	if found != "" {
		return found, true
	}
	// Not seen yet: run argon2id against the hashed approvers that could
	// match (the named one, or for a bearer token each unverified one).
	for i, ap := range a.approvers {
		if a.hashes[i] == nil || a.known[i] {
			continue
		}
		have, _ := identity.Key(ap.Name)
		if name != "" && (nameErr != nil || have != want) {
			continue
		}
		if a.hashes[i].matches(token) {
			a.digests[i], a.known[i] = presented, true
			return ap.Name, true
		}
	}
	return "", false
}

func newAuthenticator(approvers []Approver, ttl time.Duration, sessions sessionStore) *authenticator {
	a := &authenticator{approvers: approvers, sessions: sessions, ttl: ttl}
	for _, ap := range approvers {
		if ap.Hash != "" {
			h, _ := parseHash(ap.Hash) // checked by checkApprovers
			a.hashes = append(a.hashes, &h)
			a.digests = append(a.digests, [sha256.Size]byte{})
			a.known = append(a.known, false)
			continue
		}
		a.hashes = append(a.hashes, nil)
		a.digests = append(a.digests, sha256.Sum256([]byte(ap.Token)))
		a.known = append(a.known, true)
	}
	return a
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("channel: no randomness: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func sessionKey(cookie string) string {
	h := sha256.Sum256([]byte(cookie))
	return string(h[:])
}

// newSession starts a login session for name; ok is false when the store
// could not keep it (then nobody is logged in).
func (a *authenticator) newSession(name string) (cookie string, s *session, ok bool) {
	cookie = randomToken()
	s = &session{name: name, csrf: randomToken(), expires: time.Now().Add(a.ttl)}
	ctx, cancel := storeCtx()
	defer cancel()
	if err := a.sessions.putSession(ctx, sessionKey(cookie), *s); err != nil {
		return "", nil, false
	}
	return cookie, s, true
}

// session is the request's login session. A store that cannot be read
// means no session: the page asks for a login, nothing is decided.
func (a *authenticator) session(r *http.Request) (*session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, false
	}
	ctx, cancel := storeCtx()
	defer cancel()
	s, ok, err := a.sessions.getSession(ctx, sessionKey(c.Value))
	if err != nil || !ok || time.Now().After(s.expires) {
		return nil, false
	}
	return &s, true
}

func (a *authenticator) endSession(r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		ctx, cancel := storeCtx()
		defer cancel()
		_ = a.sessions.endSession(ctx, sessionKey(c.Value))
	}
}

// bearer authenticates an API request: "Authorization: Bearer <token>".
// Basic auth is deliberately not accepted: browsers replay cached Basic
// credentials on cross-site requests, which would make the API CSRF-able.
func (a *authenticator) bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		return "", false
	}
	return a.byToken("", tok)
}
