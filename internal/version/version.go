// Package version names the release of mcpsafe, in one place: the MCP
// bundle's manifest and the MCP Registry's server.json carry the same
// version (tests in package packaging check), and scripts/release refuses
// a tag that is not "v" + Release.
package version

// Release is the version the next release is tagged with (without the
// leading "v").
const Release = "0.1.0"

// Tag is the release tag a binary was built for, set at link time by
// scripts/release:
//
//	-ldflags "-X github.com/mcpsafe/mcpsafe/internal/version.Tag=v0.1.0"
//
// Empty in every other build, whose version comes from the build info
// (`go install ...@v0.1.0` records the tag there).
var Tag string
