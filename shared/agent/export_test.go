package agent

// DefaultLimits are the production bounds.
func DefaultLimits() Limits { return Limits{}.withDefaults() }
