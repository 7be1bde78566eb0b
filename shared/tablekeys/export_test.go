package tablekeys

import (
	"time"

	"github.com/commonly/runtime/shared/utcday"
)

// Usage is the key of a user's counters for the UTC day t falls on.
func Usage(userID string, t time.Time) Key { return UsageOnDay(userID, utcday.Of(t)) }
