// Package usage builds the usage and cost report (`make report`) from
// the user-day digests the alarm function keeps beside each cost ledger
// (ledger.Digest, on the state table's report index): what turns really
// cost, per day, per turn and per user-day, as one self-contained HTML
// page with inline SVG charts and the same figures as CSV.
package usage

import (
	"errors"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

// Config is what a report is made of and drawn against.
type Config struct {
	// StateTable holds the ledgers and their report index (STATE_TABLE).
	StateTable string
	// From and To are the first and last UTC days (FROM, TO; default the
	// last 7 days to today).
	From, To string
	// Out is the HTML page's path (REPORT_OUT); the CSV goes beside it.
	Out string
	// Threshold is the spend alarm's (DAILY_SPEND_ALARM_USD, default 2);
	// Cap the spend cap (DAILY_SPEND_CAP_USD, 0: none); Limits the plans'
	// daily ceilings (PLAN_TURN_LIMITS). The report draws them; it does
	// not read the deployment's settings, so give the stage's.
	Threshold money.Micros
	Cap       money.Micros
	Limits    turns.Limits
}

// DefaultOut is REPORT_OUT when unset.
const DefaultOut = "bin/report/index.html"

// LoadConfig reads the environment, every problem joined.
func LoadConfig(getenv func(string) string, now time.Time) (Config, error) {
	get := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	var errs []error
	c := Config{StateTable: getenv("STATE_TABLE"), Out: get("REPORT_OUT", DefaultOut)}
	if c.StateTable == "" {
		errs = append(errs, errors.New("STATE_TABLE is required (the stack's StateTableName output)"))
	}
	today := utcday.Of(now)
	c.To = get("TO", today)
	to, err := time.Parse(utcday.Layout, c.To)
	if err != nil {
		errs = append(errs, fmt.Errorf("TO: %q is not a day (%s)", c.To, utcday.Layout))
	}
	c.From = get("FROM", utcday.Of(to.AddDate(0, 0, -6)))
	from, err := time.Parse(utcday.Layout, c.From)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("FROM: %q is not a day (%s)", c.From, utcday.Layout))
	case from.After(to):
		errs = append(errs, fmt.Errorf("FROM %s is after TO %s", c.From, c.To))
	case to.Sub(from) > 366*24*time.Hour:
		errs = append(errs, fmt.Errorf("FROM..TO spans more than a year"))
	}
	if c.Threshold, err = money.FromUSD(get("DAILY_SPEND_ALARM_USD", "2")); err != nil || c.Threshold <= 0 {
		errs = append(errs, fmt.Errorf("DAILY_SPEND_ALARM_USD: not a positive amount of dollars"))
	}
	if v := getenv("DAILY_SPEND_CAP_USD"); v != "" {
		if c.Cap, err = money.FromUSD(v); err != nil || c.Cap <= 0 {
			errs = append(errs, fmt.Errorf("DAILY_SPEND_CAP_USD: not a positive amount of dollars"))
		}
	}
	if c.Limits, err = turns.ParseLimits(get("PLAN_TURN_LIMITS", turns.DefaultLimits)); err != nil {
		errs = append(errs, fmt.Errorf("PLAN_TURN_LIMITS: %w", err))
	}
	return c, errors.Join(errs...)
}

// Days lists the report's days, From to To.
func (c Config) Days() []string {
	from, _ := time.Parse(utcday.Layout, c.From)
	to, _ := time.Parse(utcday.Layout, c.To)
	var days []string
	for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
		days = append(days, utcday.Of(d))
	}
	return days
}
