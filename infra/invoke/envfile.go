package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
)

// envOverrides reads a SAM env-vars file ({"Parameters": {…}, "<function>":
// {…}}) and returns the values for f: "Parameters" apply to every
// function, the function's own entry (by construct id, logical id or
// path) over them. Values are strings, numbers or booleans. It also
// returns the names that f does not declare, which are ignored.
func envOverrides(path string, f *function) (map[string]string, []string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("env-vars: %w", err)
	}
	var file map[string]map[string]any
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, nil, fmt.Errorf("env-vars %s: %w (want {\"Parameters\"|\"<function>\": {\"VAR\": \"value\"}})", path, err)
	}
	apply := func(vars map[string]any) error {
		for k, v := range vars {
			switch value := v.(type) {
			case string:
				out[k] = value
			case float64, bool:
				out[k] = fmt.Sprint(value)
			default:
				return fmt.Errorf("env-vars %s: %s is not a string, number or boolean", path, k)
			}
		}
		return nil
	}
	if err := apply(file["Parameters"]); err != nil {
		return nil, nil, err
	}
	for _, name := range f.names() {
		if err := apply(file[name]); err != nil {
			return nil, nil, err
		}
	}
	var ignored []string
	for k := range out {
		if _, ok := f.Props.Environment.Variables[k]; !ok {
			ignored = append(ignored, k)
			delete(out, k)
		}
	}
	sort.Strings(ignored)
	return out, slices.Clip(ignored), nil
}
