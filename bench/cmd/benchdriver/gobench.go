package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// goBench is benchstat's medians of the Go benchmarks: unit → benchmark
// name (without the -GOMAXPROCS suffix) → value.
type goBench struct {
	values map[string]map[string]float64
	raw    string // benchstat's own table
}

func (g *goBench) get(name, unit string) (float64, bool) {
	v, ok := g.values[unit][name]
	return v, ok
}

// readGoBench runs benchstat on a go test -bench output, once for its
// table and once as CSV to read the medians.
func readGoBench(benchstat, file string) (*goBench, error) {
	raw, err := exec.Command(benchstat, file).Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", benchstat, file, err)
	}
	out, err := exec.Command(benchstat, "-format", "csv", file).Output()
	if err != nil {
		return nil, fmt.Errorf("%s -format csv %s: %w", benchstat, file, err)
	}
	g, err := parseBenchstatCSV(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	g.raw = string(raw)
	return g, nil
}

// parseBenchstatCSV reads benchstat -format csv: per unit, a header row
// (",<unit>,CI") then one row per benchmark, the first value its median.
func parseBenchstatCSV(out []byte) (*goBench, error) {
	g := &goBench{values: map[string]map[string]float64{}}
	r := csv.NewReader(bytes.NewReader(out))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("benchstat csv: %w", err)
	}
	unit := ""
	for _, rec := range recs {
		if len(rec) < 2 {
			continue
		}
		switch {
		case rec[0] == "" && len(rec) >= 3 && rec[2] == "CI":
			unit = rec[1]
			g.values[unit] = map[string]float64{}
		case rec[0] != "" && rec[0] != "geomean" && unit != "":
			v, err := strconv.ParseFloat(rec[1], 64)
			if err != nil {
				continue
			}
			name := rec[0]
			if i := strings.LastIndex(name, "-"); i > 0 {
				if _, err := strconv.Atoi(name[i+1:]); err == nil {
					name = name[:i]
				}
			}
			g.values[unit][name] = v
		}
	}
	if len(g.values) == 0 {
		return nil, fmt.Errorf("benchstat found no benchmarks")
	}
	return g, nil
}
