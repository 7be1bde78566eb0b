// Package app loads the alarm function's configuration and wires its
// parts, for the Lambda main and the local stack alike.
package app

import (
	"errors"
	"fmt"
	"strings"

	"github.com/commonly/runtime/shared/money"
)

// DefaultAlarmUSD is DAILY_SPEND_ALARM_USD when unset: the $2 a day at
// which a user's spend alarm is raised.
const DefaultAlarmUSD = "2.00"

// Config is the alarm function's configuration.
type Config struct {
	// StateTable holds the ledgers and the usage items (STATE_TABLE).
	StateTable string
	// EventBus receives SpendAlarmRaised events (EVENT_BUS_NAME).
	EventBus string
	// Threshold is a user-day's total at which the alarm is raised
	// (DAILY_SPEND_ALARM_USD, in dollars, positive, at most six decimals).
	Threshold money.Micros
}

// LoadConfig reads the configuration through getenv and reports every
// problem at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	var errs []error
	c := Config{StateTable: get("STATE_TABLE", ""), EventBus: get("EVENT_BUS_NAME", "")}
	if c.StateTable == "" {
		errs = append(errs, errors.New("STATE_TABLE is required"))
	}
	if c.EventBus == "" {
		errs = append(errs, errors.New("EVENT_BUS_NAME is required"))
	}
	usd := get("DAILY_SPEND_ALARM_USD", DefaultAlarmUSD)
	t, err := money.FromUSD(usd)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("DAILY_SPEND_ALARM_USD: %w", err))
	case t <= 0:
		errs = append(errs, fmt.Errorf("DAILY_SPEND_ALARM_USD: %q must be above zero", usd))
	}
	c.Threshold = t
	return c, errors.Join(errs...)
}
