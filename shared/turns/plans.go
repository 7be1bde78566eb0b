package turns

// The users' plans and their daily turn ceilings.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Plan is a user's subscription plan.
type Plan string

const (
	PlanFree Plan = "free"
	PlanPro  Plan = "pro"
)

// AllPlans returns every known plan, Free first.
func AllPlans() []Plan { return []Plan{PlanFree, PlanPro} }

// ParsePlan validates a plan name.
func ParsePlan(s string) (Plan, error) {
	switch p := Plan(s); p {
	case PlanFree, PlanPro:
		return p, nil
	}
	return "", fmt.Errorf("unknown plan %q (want %q or %q)", s, PlanFree, PlanPro)
}

// Limits maps each plan to its hosted turns per UTC day.
type Limits map[Plan]int64

// DefaultLimits is free=30, pro=200.
const DefaultLimits = "free=30,pro=200"

// ParseLimits reads PLAN_TURN_LIMITS, e.g. "free=30,pro=200". Every known
// plan must be given, so a typo cannot leave a plan unlimited or at zero.
func ParseLimits(s string) (Limits, error) {
	l := Limits{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("plan limits: %q is not plan=count", part)
		}
		p, err := ParsePlan(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("plan limits: %w", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("plan limits: %q is not a non-negative count", val)
		}
		if _, dup := l[p]; dup {
			return nil, fmt.Errorf("plan limits: %s given twice", p)
		}
		l[p] = n
	}
	for _, p := range AllPlans() {
		if _, ok := l[p]; !ok {
			return nil, fmt.Errorf("plan limits: no limit for %s", p)
		}
	}
	return l, nil
}

// For returns the daily ceiling of a plan; an unknown or empty plan is free.
func (l Limits) For(p Plan) int64 {
	if n, ok := l[p]; ok {
		return n
	}
	return l[PlanFree]
}

// String renders the limits in the PLAN_TURN_LIMITS form.
func (l Limits) String() string {
	parts := make([]string, 0, len(l))
	for p, n := range l {
		parts = append(parts, fmt.Sprintf("%s=%d", p, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
