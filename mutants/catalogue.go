// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// catalogue is every mutant, area by area (one catalogue_<area>.go each).
var catalogue = [][]Mutant{
	gateMutants,
	gateChannelMutants,
	grantMutants,
	canonMutants,
	frameMutants,
	journalMutants,
	ledgerMutants,
	filesMutants,
	channelMutants,
	gatewayMutants,
	proxyMutants,
	relayMutants,
	pageMutants,
	cardMutants,
	cliMutants,
	approvalStoreMutants,
	slackMutants,
}
