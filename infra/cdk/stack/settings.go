// Package stack is the runtime's CDK stack: one construct per concern
// (data, api, turn, alarm, reaper, events, observability), each in its own
// file, composed by New.
package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Construct ids that are part of a contract: `make invoke`, `sam local
// invoke` and the env-vars files name the functions by them.
const (
	TurnFunctionID   = "TurnFunction"
	AlarmFunctionID  = "AlarmFunction"
	ReaperFunctionID = "ReaperFunction"
	EventsFunctionID = "EventsFunction"
)

// maxStreamsPerUser is the events function's bound on STREAMS_PER_USER
// (functions/events/app.MaxStreamsPerUser; a test holds the two equal).
const maxStreamsPerUser = 50

// FunctionIDs are the functions' construct ids.
var FunctionIDs = []string{TurnFunctionID, AlarmFunctionID, ReaperFunctionID, EventsFunctionID}

// Lambda architectures and the Go architecture each is built for.
const (
	ARM64  = "arm64"
	X86_64 = "x86_64"
)

// retentionDays are the values CloudWatch Logs accepts.
var retentionDays = []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}

// Settings are one stage's settings: the "stages" object of cdk.json,
// picked by the stage from context (`-c stage=prod`).
type Settings struct {
	// Stage names the deployment (dev, prod): in the stack's name, the
	// functions' STAGE and the sandboxes' metadata.
	Stage string `json:"-"`
	// Production turns on deletion protection and retention of the tables
	// and secrets when the stack is deleted.
	Production bool `json:"production"`
	// Architecture of the functions: arm64 (default) or x86_64.
	Architecture string `json:"architecture"`
	// AssetDir holds <function>/bootstrap for Architecture (`make build
	// LAMBDA_GOARCH=arm64` writes bin/arm64). Relative to the repository.
	AssetDir string `json:"assetDir"`

	// JWTIssuer and JWTAudience configure the API's JWT authorizer.
	JWTIssuer   string   `json:"jwtIssuer"`
	JWTAudience []string `json:"jwtAudience"`
	// CORSOrigins are the frontend origins allowed to call the API.
	CORSOrigins []string `json:"corsOrigins"`
	// ThrottleRate (requests/s, steady) and ThrottleBurst bound the API stage.
	ThrottleRate  float64 `json:"throttleRate"`
	ThrottleBurst float64 `json:"throttleBurst"`

	// LogRetentionDays of every log group (functions, API access logs);
	// one of CloudWatch's allowed values.
	LogRetentionDays int `json:"logRetentionDays"`
	// ReservedConcurrency by function construct id; absent or 0 reserves
	// nothing (the account's unreserved pool). The events function's is
	// required in every stage: its URL has no API Gateway throttling in
	// front, so this bounds what it takes (docs/operations.md).
	ReservedConcurrency map[string]int `json:"reservedConcurrency"`
	// StreamsPerUser caps each user's open event streams (the events
	// function's STREAMS_PER_USER); 0 is the function's default.
	StreamsPerUser int `json:"streamsPerUser"`

	// Secrets the stage uses, by variable (shared/secrets.Names): "" makes
	// the stack create an empty secret whose value ops put once; an ARN
	// uses an existing secret. A secret variable not listed gets no ARN,
	// and the feature it serves stays off.
	Secrets map[string]string `json:"secrets"`
	// Environment sets, by function construct id, the values of variables
	// the stack declares (never a secret's: those come from Secrets).
	Environment map[string]map[string]string `json:"environment"`
	// AlarmEmail, when set, subscribes an address to the ops topic.
	AlarmEmail string `json:"alarmEmail"`
	// Tracing sends the functions' spans to X-Ray (on by default), with
	// the share of successful turns kept (tracing.go).
	Tracing Tracing `json:"tracing"`
}

// LoadSettings reads the stage's settings from the context value of
// "stages" (a JSON object by stage, as cdk.json holds it) and resolves
// AssetDir against root.
func LoadSettings(stage string, stages any, root string) (Settings, error) {
	if stage == "" {
		return Settings{}, errors.New("no stage: pass -c stage=NAME")
	}
	raw, err := json.Marshal(stages)
	if err != nil {
		return Settings{}, fmt.Errorf("context stages: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return Settings{}, fmt.Errorf("context stages: %w", err)
	}
	one, ok := all[stage]
	if !ok {
		names := make([]string, 0, len(all))
		for n := range all {
			names = append(names, n)
		}
		slices.Sort(names)
		return Settings{}, fmt.Errorf("stage %q is not in the context's stages (%s)", stage, strings.Join(names, ", "))
	}
	dec := json.NewDecoder(strings.NewReader(string(one)))
	dec.DisallowUnknownFields()
	var s Settings
	if err := dec.Decode(&s); err != nil {
		return Settings{}, fmt.Errorf("stage %s: %w", stage, err)
	}
	s.Stage = stage
	if s.AssetDir != "" && !filepath.IsAbs(s.AssetDir) {
		s.AssetDir = filepath.Join(root, s.AssetDir)
	}
	return s, s.withDefaults().validate()
}

// withDefaults fills what a stage left out.
func (s *Settings) withDefaults() *Settings {
	if s.Architecture == "" {
		s.Architecture = ARM64
	}
	if s.LogRetentionDays == 0 {
		s.LogRetentionDays = 30
	}
	if s.ThrottleRate == 0 {
		s.ThrottleRate = 50
	}
	if s.ThrottleBurst == 0 {
		s.ThrottleBurst = 100
	}
	return s
}

// validate reports every problem at once.
func (s *Settings) validate() error {
	var errs []error
	if s.Architecture != ARM64 && s.Architecture != X86_64 {
		errs = append(errs, fmt.Errorf("architecture %q is not %s or %s", s.Architecture, ARM64, X86_64))
	}
	if s.AssetDir == "" {
		errs = append(errs, errors.New("assetDir is required"))
	}
	if !strings.HasPrefix(s.JWTIssuer, "https://") {
		errs = append(errs, fmt.Errorf("jwtIssuer %q is not an https URL", s.JWTIssuer))
	}
	if len(s.JWTAudience) == 0 {
		errs = append(errs, errors.New("jwtAudience is required"))
	}
	if len(s.CORSOrigins) == 0 {
		errs = append(errs, errors.New("corsOrigins is required (the frontend's origins)"))
	}
	for _, o := range s.CORSOrigins {
		if o == "*" {
			errs = append(errs, errors.New("corsOrigins: * is not allowed; name the frontend's origins"))
		}
	}
	if !slices.Contains(retentionDays, s.LogRetentionDays) {
		errs = append(errs, fmt.Errorf("logRetentionDays %d is not one of CloudWatch's %v", s.LogRetentionDays, retentionDays))
	}
	for id, n := range s.ReservedConcurrency {
		if !slices.Contains(FunctionIDs, id) || n < 0 {
			errs = append(errs, fmt.Errorf("reservedConcurrency: %s=%d (ids: %s; n ≥ 0)", id, n, strings.Join(FunctionIDs, ", ")))
		}
	}
	if s.ReservedConcurrency[EventsFunctionID] < 1 {
		errs = append(errs, fmt.Errorf("reservedConcurrency: %s is required (≥ 1): its URL has no API Gateway in front, so its reserved concurrency bounds what it takes", EventsFunctionID))
	}
	if s.StreamsPerUser < 0 || s.StreamsPerUser > maxStreamsPerUser {
		errs = append(errs, fmt.Errorf("streamsPerUser %d is not 0 (the default) to %d", s.StreamsPerUser, maxStreamsPerUser))
	}
	if err := s.Tracing.validate(); err != nil {
		errs = append(errs, err)
	}
	for id := range s.Environment {
		if !slices.Contains(FunctionIDs, id) {
			errs = append(errs, fmt.Errorf("environment: %s is not a function (%s)", id, strings.Join(FunctionIDs, ", ")))
		}
	}
	errs = append(errs, s.checkFirstDeploy())
	return errors.Join(errs...)
}

// checkAssets reports a missing bootstrap before the CDK does, with the
// command that builds it.
func (s *Settings) checkAssets(functions ...string) error {
	var errs []error
	for _, fn := range functions {
		if _, err := os.Stat(filepath.Join(s.AssetDir, fn, "bootstrap")); err != nil {
			errs = append(errs, fmt.Errorf("%s/bootstrap is missing: run `make build LAMBDA_GOARCH=%s`", filepath.Join(s.AssetDir, fn), goarch(s.Architecture)))
		}
	}
	return errors.Join(errs...)
}

// goarch is the Go architecture of a Lambda architecture.
func goarch(lambdaArch string) string {
	if lambdaArch == X86_64 {
		return "amd64"
	}
	return "arm64"
}
