package ledger

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
)

var validNonces, invalidNonces = loadNonces()

func loadNonces() (valid, invalid []string) {
	raw, err := os.ReadFile("testdata/nonces.json")
	if err != nil {
		panic(err)
	}
	var v struct{ Valid, Invalid []string }
	if err := json.Unmarshal(raw, &v); err != nil {
		panic(err)
	}
	if len(v.Valid) == 0 || len(v.Invalid) == 0 {
		panic("testdata/nonces.json: empty vectors")
	}
	return v.Valid, v.Invalid
}

func TestCheckNonce(t *testing.T) {
	for _, n := range validNonces {
		if err := checkNonce(n); err != nil {
			t.Errorf("checkNonce(%q) = %v; want nil", n, err)
		}
	}
	for _, n := range invalidNonces {
		if err := checkNonce(n); !errors.Is(err, ErrInvalidNonce) {
			t.Errorf("checkNonce(%q) = %v; want ErrInvalidNonce", n, err)
		}
	}
}
