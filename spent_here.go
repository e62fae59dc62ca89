package mcpsafe

import (
	"sync"
	"time"
)

// maxSpentHere bounds what spentHere remembers.
const maxSpentHere = 100_000

// spentHere remembers, until they expire, the grants this gate saw its
// ledger spend, so that one presented to this gate again (a replayed token
// or handle) is refused before it costs a journal record: a redemption's
// record and the refusal that closes it are written past the journal's cap
// on refusals, and a replay must not be a way around that cap. It only
// ever refuses earlier what the ledger would refuse; past maxSpentHere
// live entries it remembers no more, and such replays cost their records
// as before. A grant given back to the ledger is forgotten.
type spentHere struct {
	mu sync.Mutex
	m  map[string]time.Time // nonce -> expiry
}

func (s *spentHere) has(nonce string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.m[nonce]
	return ok && now.Before(exp)
}

func (s *spentHere) add(nonce string, exp, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]time.Time{}
	}
	if len(s.m) >= maxSpentHere {
		for n, e := range s.m {
			if !now.Before(e) {
				delete(s.m, n)
			}
		}
		if len(s.m) >= maxSpentHere {
			return
		}
	}
	s.m[nonce] = exp
}

func (s *spentHere) forget(nonce string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, nonce)
}
