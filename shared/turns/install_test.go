package turns

import (
	"testing"
	"time"
)

func TestEffectiveEngine(t *testing.T) {
	mig := func(from, to EngineName, s MigrationState) *Migration {
		return &Migration{From: from, To: to, State: s}
	}
	cases := []struct {
		name string
		in   Install
		def  EngineName
		want EngineName
	}{
		{"no engine uses default native", Install{}, Native, Native},
		{"no engine uses default durable-object", Install{}, DurableObject, DurableObject},
		{"explicit engine beats default", Install{Engine: DurableObject}, Native, DurableObject},
		{"in progress keeps the old engine", Install{Engine: DurableObject, Migration: mig(DurableObject, Native, MigrationInProgress)}, Native, DurableObject},
		{"done switches to the target", Install{Engine: DurableObject, Migration: mig(DurableObject, Native, MigrationDone)}, Native, Native},
		{"rolled back returns to the old engine", Install{Engine: DurableObject, Migration: mig(DurableObject, Native, MigrationRolledBack)}, Native, DurableObject},
		{"reverse migration in progress", Install{Engine: Native, Migration: mig(Native, DurableObject, MigrationInProgress)}, Native, Native},
		{"reverse migration done", Install{Engine: Native, Migration: mig(Native, DurableObject, MigrationDone)}, Native, DurableObject},
		{"migration without origin falls back to the install engine", Install{Engine: DurableObject, Migration: mig("", Native, MigrationInProgress)}, Native, DurableObject},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := EffectiveEngine(c.in, c.def); got != c.want {
				t.Errorf("EffectiveEngine = %s, want %s", got, c.want)
			}
		})
	}
}

func TestStartMigration(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	in := Install{Engine: DurableObject}
	m := StartMigration(in, Native, Native, MigrationInProgress, now)
	if m.From != DurableObject || m.To != Native || m.State != MigrationInProgress {
		t.Fatalf("start: %+v", m)
	}
	in.Migration = &m
	if got := EffectiveEngine(in, Native); got != DurableObject {
		t.Fatalf("during migration got %s", got)
	}
	done := StartMigration(in, Native, Native, MigrationDone, now)
	if done.From != DurableObject {
		t.Fatalf("finishing must keep the origin: %+v", done)
	}
	in.Migration = &done
	if got := EffectiveEngine(in, Native); got != Native {
		t.Fatalf("after done got %s", got)
	}
	back := StartMigration(in, Native, Native, MigrationRolledBack, now)
	in.Migration = &back
	if got := EffectiveEngine(in, Native); got != DurableObject || back.From != DurableObject {
		t.Fatalf("rolled back after done got %s (%+v)", got, back)
	}
}

func TestParse(t *testing.T) {
	if _, err := ParseEngine("lambda"); err == nil {
		t.Error("unknown engine accepted")
	}
	if e, err := ParseEngine("durable-object"); err != nil || e != DurableObject {
		t.Errorf("durable-object: %v %v", e, err)
	}
	if _, err := ParseMigrationState("paused"); err == nil {
		t.Error("unknown state accepted")
	}
}

func TestCloneSharesNothing(t *testing.T) {
	tools, none := []string{"commonly_run_code"}, []string{}
	in := &Install{InstallID: "i1", Tools: &tools, Connectors: []string{"github"},
		Migration: &Migration{From: Native, To: DurableObject, State: MigrationInProgress}}
	cp := in.Clone()
	(*cp.Tools)[0], cp.Connectors[0], cp.Migration.State = "changed", "changed", MigrationDone
	if tools[0] != "commonly_run_code" || in.Connectors[0] != "github" || in.Migration.State != MigrationInProgress {
		t.Errorf("the clone shares with the original: %+v %v %+v", *in.Tools, in.Connectors, *in.Migration)
	}
	empty := (&Install{Tools: &none}).Clone()
	if empty.Tools == nil || len(*empty.Tools) != 0 || (&Install{}).Clone().Tools != nil {
		t.Error("a clone must keep no tools apart from every tool")
	}
}
