package approvals

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseRequire turns "TOOL=N" entries into ServiceOptions.Require. A tool
// named twice is an error, not a silent override.
func ParseRequire(entries []string) (map[string]int, error) {
	out := map[string]int{}
	for _, e := range entries {
		tool, n, ok := strings.Cut(e, "=")
		if !ok || tool == "" || strings.TrimSpace(tool) != tool {
			return nil, fmt.Errorf("--require %q: want TOOL=N", e)
		}
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 || strconv.Itoa(v) != n {
			return nil, fmt.Errorf("--require %q: N must be a whole number >= 1", e)
		}
		if _, dup := out[tool]; dup {
			return nil, fmt.Errorf("--require: %s given twice", tool)
		}
		out[tool] = v
	}
	return out, nil
}
