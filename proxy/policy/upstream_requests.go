package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// RequestKind is a kind of request an upstream server sends the client.
type RequestKind string

const (
	KindElicitation RequestKind = "elicitation"
	// KindURLElicitation is URL-mode elicitation (the upstream sends the
	// person to a link), a part of elicitation the policy may refuse alone.
	KindURLElicitation RequestKind = "url_elicitation"
	KindSampling       RequestKind = "sampling"
	KindRoots          RequestKind = "roots"
)

// requestKinds are every RequestKind.
var requestKinds = [...]RequestKind{KindElicitation, KindURLElicitation, KindSampling, KindRoots}

// RequestKinds yields every RequestKind: for k := range RequestKinds.
func RequestKinds(yield func(RequestKind) bool) {
	for _, k := range requestKinds {
		if !yield(k) {
			return
		}
	}
}

// UpstreamRequests is the policy's `upstream_requests`: for each kind,
// whether the upstream's requests reach the downstream client (always only
// a client that declared the capability). The zero value is the default:
//
//   - elicitation: relay. A gateway that hid elicitation would make an
//     upstream's own confirmations silently proceed, or fail. Every relayed
//     elicitation says whose it is.
//   - url_elicitation: relay when elicitation is relayed. Refusing it
//     alone keeps the upstream from sending the person to links while its
//     forms still reach them.
//   - sampling: relay. The client asks its user before any sampling, and
//     it is the client's model and budget the upstream asks for.
//   - roots: refuse. Some servers (the npm filesystem server among them)
//     replace the directories the operator gave them on the command line
//     with the client's roots: relaying them would let the downstream
//     client widen what the upstream may touch behind the operator's back.
type UpstreamRequests struct {
	Refuse []RequestKind
	Allow  []RequestKind // explicitly allowed; only roots needs it
}

// Allows reports whether the upstream's requests of kind k reach a client
// that declared the capability.
func (u UpstreamRequests) Allows(k RequestKind) bool {
	if slices.Contains(u.Refuse, k) {
		return false
	}
	switch k {
	case KindRoots:
		return slices.Contains(u.Allow, k)
	case KindURLElicitation:
		return u.Allows(KindElicitation)
	}
	return k == KindElicitation || k == KindSampling
}

// parseUpstreamRequests reads `upstream_requests: {elicitation: relay,
// url_elicitation: refuse, sampling: refuse, roots: relay}`. Unknown kinds
// and values are errors.
func parseUpstreamRequests(m map[string]string) (UpstreamRequests, error) {
	var u UpstreamRequests
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kind := RequestKind(k)
		if !slices.Contains(requestKinds[:], kind) {
			return u, fmt.Errorf("unknown kind %q (want elicitation, url_elicitation, sampling or roots)", k)
		}
		switch strings.TrimSpace(m[k]) {
		case "relay":
			u.Allow = append(u.Allow, kind)
		case "refuse":
			u.Refuse = append(u.Refuse, kind)
		default:
			return u, fmt.Errorf("%s: %q is neither relay nor refuse", k, m[k])
		}
	}
	return u, nil
}
