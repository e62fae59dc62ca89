package mcpsafe

// OpenGrantForFuzz exposes the gate's unseal path (authenticate, then parse
// strictly) to FuzzOpenGrant; it exists only in the test binary.
func OpenGrantForFuzz(k Keys, audience, sealed string) (string, error) {
	g, err := openGrant(k.ring, audience, sealed)
	if err != nil {
		return "", err
	}
	return g.Nonce, nil
}
