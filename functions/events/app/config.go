// Package app loads the events function's configuration and wires its
// parts, for the Lambda main and the local stack alike.
package app

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/commonly/runtime/functions/events/handler"
	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
)

// MaxStream bounds STREAM_MAX: a function URL's invocation lasts at most
// 15 minutes.
const MaxStream = 15 * time.Minute

// Config is the events function's configuration.
type Config struct {
	// Tables are STATE_TABLE and RUNS_TABLE, both required (the store
	// is built with both; this function reads runs only).
	Tables store.Tables
	// JWTIssuer (JWT_ISSUER, an https URL with OIDC discovery) and
	// JWTAudience (JWT_AUDIENCE, comma-separated): the same as the API's
	// JWT authorizer's; both required.
	JWTIssuer   string
	JWTAudience []string
	// StreamMax is STREAM_MAX: a duration or seconds, default 14 min.
	StreamMax time.Duration
	// StreamsPerUser is STREAMS_PER_USER: how many streams a user may
	// hold open at once, default turns.DefaultStreamsPerUser, at most
	// MaxStreamsPerUser (each is a slot item of the user's, read per open).
	StreamsPerUser int
	// Poll is how often a watch reads the run; zero is the watcher's
	// default, the deployment's (LoadConfig leaves it: the benchmark of
	// how late is live, bench/cmd/livebench, sets it).
	Poll time.Duration
}

// MaxStreamsPerUser bounds STREAMS_PER_USER.
const MaxStreamsPerUser = 50

// Variables are every variable LoadConfig reads.
var Variables = []string{"STATE_TABLE", "RUNS_TABLE", "JWT_ISSUER", "JWT_AUDIENCE", "STREAM_MAX", "STREAMS_PER_USER"}

// LoadConfig reads the configuration and reports every problem at once,
// in a fixed order.
func LoadConfig(getenv func(string) string) (Config, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	c := Config{
		Tables:    store.Tables{State: get("STATE_TABLE"), Runs: get("RUNS_TABLE")},
		JWTIssuer: get("JWT_ISSUER"),
	}
	for _, a := range strings.Split(get("JWT_AUDIENCE"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.JWTAudience = append(c.JWTAudience, a)
		}
	}
	var errs []error
	for _, req := range []struct{ name, value string }{{"STATE_TABLE", c.Tables.State}, {"RUNS_TABLE", c.Tables.Runs}, {"JWT_ISSUER", c.JWTIssuer}} {
		if req.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", req.name))
		}
	}
	if len(c.JWTAudience) == 0 {
		errs = append(errs, errors.New("JWT_AUDIENCE is required"))
	}
	if c.JWTIssuer != "" {
		if u, err := url.Parse(c.JWTIssuer); err != nil || !httpwire.IsHTTPURL(u) {
			errs = append(errs, fmt.Errorf("JWT_ISSUER: %q is not an http(s) URL", c.JWTIssuer))
		}
	}
	var err error
	if c.StreamMax, err = httpwire.ParseTimeout("STREAM_MAX", get("STREAM_MAX"), handler.DefaultMaxStream, MaxStream); err != nil {
		errs = append(errs, err)
	}
	c.StreamsPerUser = turns.DefaultStreamsPerUser
	if v := get("STREAMS_PER_USER"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxStreamsPerUser {
			errs = append(errs, fmt.Errorf("STREAMS_PER_USER: %q is not a whole number from 1 to %d", v, MaxStreamsPerUser))
		}
		c.StreamsPerUser = n
	}
	return c, errors.Join(errs...)
}
