package approvals

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/mcpsafe/mcpsafe/channel"
)

// Ceremonies in progress (a single sign-on, a passkey registration or
// approval) are kept in the store, so that the step that finishes one may
// reach any replica. Each is taken once: the finishing step removes it,
// whatever happens next.
type flowStore interface {
	// putFlow keeps value under (kind, key) until expires, replacing any
	// earlier one; errTooManyFlows when limit live flows of kind exist.
	putFlow(ctx context.Context, kind, key string, value []byte, expires time.Time, limit int) error
	// takeFlow removes and returns the flow; ok is false when there is
	// none or it expired.
	takeFlow(ctx context.Context, kind, key string) (value []byte, ok bool, err error)
}

var errTooManyFlows = errors.New("too many ceremonies in progress")

// Flow kinds.
const (
	flowOIDC            = "oidc"
	flowPasskeyRegister = "pk-register"
	flowPasskeyApprove  = "pk-approve"
)

// passkeyStore keeps registered passkeys in a store replicas share
// (PostgreSQL). The embedded stores have none: their passkeys live in
// --passkeys-file as before.
type passkeyStore interface {
	addPasskey(ctx context.Context, k channel.RegisteredPasskey, flags webauthn.CredentialFlags) error
	listPasskeys(ctx context.Context) ([]channel.RegisteredPasskey, map[string]webauthn.CredentialFlags, error)
}

// memFlows is the embedded stores' flow store.
type memFlows struct {
	mu sync.Mutex
	m  map[[2]string]memFlow
}

type memFlow struct {
	value   []byte
	expires time.Time
}

func newMemFlows() *memFlows { return &memFlows{m: map[[2]string]memFlow{}} }

func (f *memFlows) putFlow(_ context.Context, kind, key string, value []byte, expires time.Time, limit int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	n := 0
	for k, v := range f.m {
		switch {
		case now.After(v.expires):
			delete(f.m, k)
		case k[0] == kind:
			n++
		}
	}
	if _, ok := f.m[[2]string{kind, key}]; !ok && limit > 0 && n >= limit {
		return errTooManyFlows
	}
	f.m[[2]string{kind, key}] = memFlow{value: value, expires: expires}
	return nil
}

func (f *memFlows) takeFlow(_ context.Context, kind, key string) ([]byte, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.m[[2]string{kind, key}]
	delete(f.m, [2]string{kind, key})
	if !ok || time.Now().After(v.expires) {
		return nil, false, nil
	}
	return v.value, true, nil
}
