package mcpsafe_test

import (
	"os/exec"
	"strings"
	"testing"
)

// storeDrivers are the packages of the ledger backends' drivers.
var storeDrivers = []string{"github.com/jackc/pgx/v5", "github.com/redis/go-redis/v9", "modernc.org/sqlite"}

func linkedDrivers(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	var got []string
	for _, d := range storeDrivers {
		if deps[d] {
			got = append(got, d)
		}
	}
	return got
}

// A program using the gate links in no store driver: each ledger backend
// is a package of its own, linked in by importing it. The CLI wiring
// imports all three (the control, which shows the check can fail).
func TestGateLinksNoStoreDriver(t *testing.T) {
	if got := linkedDrivers(t, "github.com/mcpsafe/mcpsafe"); len(got) != 0 {
		t.Errorf("the gate links in store drivers %v; a backend must be chosen by import", got)
	}
	if got := linkedDrivers(t, "github.com/mcpsafe/mcpsafe/internal/serverconf"); len(got) != len(storeDrivers) {
		t.Errorf("control: serverconf links in %v; want all of %v", got, storeDrivers)
	}
}
