package identity_test

import (
	"fmt"

	"github.com/mcpsafe/mcpsafe/internal/identity"
)

// Principals and approver names share one namespace: the approver "alice"
// is the authenticated caller "user:alice", in any spelling. A name with no
// key (here a Cyrillic look-alike) is never proven different from anyone.
func ExampleKey() {
	for _, name := range []string{"user:alice", "ALICE", "ａｌｉｃｅ", "\u0430lice"} {
		k, err := identity.Key(name)
		fmt.Printf("%q -> %q %v\n", name, k, err != nil)
	}
	fmt.Println(identity.Same("user:Alice", "alice"), identity.Same("user:alice", "bob"))
	// Output:
	// "user:alice" -> "alice" false
	// "ALICE" -> "alice" false
	// "ａｌｉｃｅ" -> "alice" false
	// "аlice" -> "" true
	// true false
}
