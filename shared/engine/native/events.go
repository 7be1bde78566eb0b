package native

import "github.com/commonly/runtime/shared/runs"

// recordKills announces the end of each sandbox the turn's code ran in
// (the loop announced their creation), once the turn's kill was tried.
func recordKills(rec runs.Recorder, run *runs.Run, ok bool) {
	seen := map[string]bool{}
	for _, s := range run.Steps {
		for _, c := range s.ToolCalls {
			if c.CodeRun == nil || c.CodeRun.SandboxID == "" || seen[c.CodeRun.SandboxID] {
				continue
			}
			seen[c.CodeRun.SandboxID] = true
			runs.Record(rec, runs.SandboxKilled{SandboxID: c.CodeRun.SandboxID, OK: ok})
		}
	}
}
