package proxy

import (
	"fmt"
	"slices"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// gateOwned are the tool names the gate registers on the downstream
// server itself: an upstream tool of one of these names would replace the
// gate's (the SDK keeps the last tool added under a name), and every card
// decision would go to the upstream while the card showed its answer.
var gateOwned = []string{approver.CardDecisionTool}

// reservedName refuses an upstream tool whose name, as the upstream gives
// it or as clients would see it (down, with a gateway prefix), is one the
// gate owns. Such a tool is withheld; the gate's stays.
func reservedName(up, down string) error {
	if !slices.Contains(gateOwned, up) && !slices.Contains(gateOwned, down) {
		return nil
	}
	return fmt.Errorf("proxy: upstream tool %s withheld: the name is mcpsafe's own (the approval card's decision tool), which an upstream tool never replaces", prompt.Quote(up))
}
