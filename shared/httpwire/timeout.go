package httpwire

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseTimeout reads an outbound call's configured timeout, the variable
// name: a Go duration ("30s") or whole seconds ("30"), in (0, max]; empty
// means def. Errors name the variable.
func ParseTimeout(name, v string, def, max time.Duration) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, fmt.Errorf("%s: %q is neither a duration nor seconds", name, v)
		}
		d = time.Duration(secs) * time.Second
	}
	if d <= 0 || d > max {
		return 0, fmt.Errorf("%s: %s is outside (0, %s]", name, d, max)
	}
	return d, nil
}
