package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Local stand-ins for what the template leaves to CloudFormation.
const (
	localAccount = "123456789012"
	localPrefix  = "arn:aws:"
)

// Construct ids of the stack's tables (infra/cdk/stack: StateTableID and
// RunsTableID); the invoke test fails if they drift, as no table would
// then be created.
const (
	stateTableID = "StateTable"
	runsTableID  = "RunsTable"
)

// template is a synthesized CloudFormation template.
type template struct {
	Resources map[string]resource `json:"Resources"`
	dir       string              // the cloud assembly (assets are relative to it)
	stack     string              // the stack's name, from the file's name
	region    string
}

type resource struct {
	Type       string          `json:"Type"`
	Properties json.RawMessage `json:"Properties"`
	Metadata   map[string]any  `json:"Metadata"`
}

// path is the resource's construct path (aws:cdk:path metadata).
func (r resource) path() string { s, _ := r.Metadata["aws:cdk:path"].(string); return s }

// constructID is the id of the construct whose default child r is
// (".../TurnFunction/Resource" → "TurnFunction").
func (r resource) constructID() string {
	parts := strings.Split(strings.TrimSuffix(r.path(), "/Resource"), "/")
	return parts[len(parts)-1]
}

func loadTemplate(path, region string) (*template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("template: %w (run `make synth`)", err)
	}
	t := &template{dir: filepath.Dir(path), stack: strings.TrimSuffix(filepath.Base(path), ".template.json"), region: region}
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	return t, nil
}

// function is one AWS::Lambda::Function of the template.
type function struct {
	ID        string // construct id
	LogicalID string
	Path      string
	Props     struct {
		Architectures []string                           `json:"Architectures"`
		Handler       string                             `json:"Handler"`
		Runtime       string                             `json:"Runtime"`
		MemorySize    int                                `json:"MemorySize"`
		Timeout       int                                `json:"Timeout"`
		Environment   struct{ Variables map[string]any } `json:"Environment"`
		LoggingConfig struct {
			LogFormat           string `json:"LogFormat"`
			ApplicationLogLevel string `json:"ApplicationLogLevel"`
		} `json:"LoggingConfig"`
	}
	// AssetDir is the function's code in the cloud assembly.
	AssetDir string
}

// names are the identifiers an env-vars file or a command line may use
// for the function: its construct id, logical id, or construct path.
func (f *function) names() []string {
	return []string{f.ID, f.LogicalID, f.Path, strings.TrimSuffix(f.Path, "/Resource")}
}

// functions lists the template's functions by construct id.
func (t *template) functions() []string {
	var ids []string
	for _, r := range t.Resources {
		if r.Type == "AWS::Lambda::Function" {
			ids = append(ids, r.constructID())
		}
	}
	slices.Sort(ids)
	return ids
}

// function finds a function by construct id, logical id or path.
func (t *template) function(name string) (*function, error) {
	var found []*function
	for logical, r := range t.Resources {
		if r.Type != "AWS::Lambda::Function" {
			continue
		}
		f := &function{ID: r.constructID(), LogicalID: logical, Path: r.path()}
		if !slices.Contains(f.names(), name) {
			continue
		}
		if err := json.Unmarshal(r.Properties, &f.Props); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		asset, _ := r.Metadata["aws:asset:path"].(string)
		if asset == "" || r.Metadata["aws:asset:property"] != "Code" {
			return nil, fmt.Errorf("%s: no code asset in its metadata (synthesize with asset metadata, as `cdk synth` does)", name)
		}
		f.AssetDir = filepath.Join(t.dir, asset)
		found = append(found, f)
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("no function %q in the template (functions: %s)", name, strings.Join(t.functions(), ", "))
	default:
		return nil, fmt.Errorf("%q names %d functions; use the logical id or the construct path", name, len(found))
	}
}

// tableName is a table's local name: what CloudFormation would name it,
// less the random suffix.
func (t *template) tableName(logical string) string { return t.stack + "-" + logical }

// tables returns the local names of the state and runs tables.
func (t *template) tables() (state, runs string, err error) {
	for logical, r := range t.Resources {
		if r.Type != "AWS::DynamoDB::Table" {
			continue
		}
		switch r.constructID() {
		case stateTableID:
			state = t.tableName(logical)
		case runsTableID:
			runs = t.tableName(logical)
		}
	}
	if state == "" || runs == "" {
		return "", "", fmt.Errorf("the template has no %s and %s tables", stateTableID, runsTableID)
	}
	return state, runs, nil
}

// resolve gives a template value its local value: table names, the bus,
// this function's name, ARNs built from them. A secret resolves to ""
// (there is no Secrets Manager here: give the plain variable in the
// env-vars file). What it cannot resolve is an error naming the variable,
// which an env-vars file can override.
func (t *template) resolve(v any) (string, error) {
	switch value := v.(type) {
	case string:
		return value, nil
	case float64, bool:
		return fmt.Sprint(value), nil
	case map[string]any:
		if len(value) != 1 {
			break
		}
		if ref, ok := value["Ref"].(string); ok {
			return t.ref(ref)
		}
		if ga, ok := value["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
			logical, _ := ga[0].(string)
			attr, _ := ga[1].(string)
			return t.getAtt(logical, attr)
		}
		if j, ok := value["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			parts, _ := j[1].([]any)
			out := make([]string, len(parts))
			for i, p := range parts {
				s, err := t.resolve(p)
				if err != nil {
					return "", err
				}
				out[i] = s
			}
			return strings.Join(out, sep), nil
		}
	}
	raw, _ := json.Marshal(v)
	return "", fmt.Errorf("cannot resolve %s locally", raw)
}

func (t *template) ref(name string) (string, error) {
	switch name {
	case "AWS::Region":
		return t.region, nil
	case "AWS::AccountId":
		return localAccount, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		return t.stack, nil
	}
	r, ok := t.Resources[name]
	if !ok {
		return "", fmt.Errorf("{Ref: %s}: no such resource or parameter", name)
	}
	switch r.Type {
	case "AWS::DynamoDB::Table":
		return t.tableName(name), nil
	case "AWS::Lambda::Function":
		return r.constructID(), nil
	case "AWS::Events::EventBus":
		var p struct{ Name string }
		_ = json.Unmarshal(r.Properties, &p)
		return p.Name, nil
	case "AWS::SecretsManager::Secret":
		return "", nil
	}
	return "", fmt.Errorf("{Ref: %s} (%s): not resolved locally", name, r.Type)
}

func (t *template) getAtt(logical, attr string) (string, error) {
	r, ok := t.Resources[logical]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt %s: no such resource", logical)
	}
	name, err := t.ref(logical)
	if err != nil {
		return "", err
	}
	arn := func(service, resource string) string {
		return localPrefix + service + ":" + t.region + ":" + localAccount + ":" + resource
	}
	switch {
	case r.Type == "AWS::DynamoDB::Table" && attr == "Arn":
		return arn("dynamodb", "table/"+name), nil
	case r.Type == "AWS::Lambda::Function" && attr == "Arn":
		return arn("lambda", "function:"+name), nil
	case r.Type == "AWS::Events::EventBus" && attr == "Arn":
		return arn("events", "event-bus/"+name), nil
	case r.Type == "AWS::Events::EventBus" && attr == "Name":
		return name, nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s (%s): not resolved locally", logical, attr, r.Type)
}

// environment is the function's variables with local values, overridden
// by the env-vars file (which may set only declared variables, as `sam
// local invoke --env-vars` does).
func (t *template) environment(f *function, overrides map[string]string) (map[string]string, error) {
	env := map[string]string{}
	var errs []error
	for name, v := range f.Props.Environment.Variables {
		if o, ok := overrides[name]; ok {
			env[name] = o
			continue
		}
		s, err := t.resolve(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (set it in the env-vars file)", name, err))
			continue
		}
		env[name] = s
	}
	return env, errors.Join(errs...)
}
