package mcpsafe

import "strconv"

// String is the level's name as journal records spell it.
func (a Assurance) String() string {
	switch a {
	case AssuranceClientRelayed:
		return "client_relayed"
	case AssuranceLocalPage:
		return "local_page"
	case AssuranceChannel:
		return "channel"
	case AssurancePasskey:
		return "passkey"
	}
	return "assurance(" + strconv.Itoa(int(a)) + ")"
}
