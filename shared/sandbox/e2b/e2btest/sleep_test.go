package e2btest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Sleep runs its time when the client stays, and returns false as soon
// as the client goes away (which interrupts the kernel).
func TestSleepEndsWhenTheClientGoes(t *testing.T) {
	f := Start(t)
	id := createRaw(t, f, `{"templateID":"base"}`)["sandboxID"].(string)
	slept := make(chan bool, 2)
	f.OnExecute(func(_, _, code string, w *StreamWriter) {
		d := time.Millisecond
		if code == "long" {
			d = time.Hour
		}
		slept <- w.Sleep(d)
	})
	if resp, body := do(t, f, "POST", "/execute", `{"code":"short"}`, map[string]string{"E2b-Sandbox-Id": id, "E2b-Sandbox-Port": "49999"}); resp.StatusCode != 200 || !strings.Contains(body, "end_of_execution") || !<-slept {
		t.Fatalf("short sleep: %d %q", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", f.URL+"/execute", strings.NewReader(`{"code":"long"}`))
	req.Header.Set("E2b-Sandbox-Id", id)
	req.Header.Set("E2b-Sandbox-Port", "49999")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = resp.Body.Read(make([]byte, 1<<10))
		<-ctx.Done()
		resp.Body.Close()
	}
	select {
	case ok := <-slept:
		if ok {
			t.Error("Sleep reported a full sleep for a client that went away")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep did not return when the client went away")
	}
}

// Sandboxes lists the live ones: a killed or expired sandbox is not listed.
func TestSandboxesListsTheLiveOnes(t *testing.T) {
	f := Start(t)
	clock := NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f.SetClock(clock.Now)
	keep := f.Seed(Seeded{StartedAt: clock.Now(), EndAt: clock.Now().Add(time.Hour), Metadata: map[string]string{"stage": "s"}})
	f.Seed(Seeded{StartedAt: clock.Now()})
	gone := f.Seed(Seeded{StartedAt: clock.Now(), EndAt: clock.Now().Add(time.Hour)})
	f.Vanish(gone)
	clock.Advance(181 * time.Second)
	got := f.Sandboxes()
	if len(got) != 1 || got[0].ID != keep || got[0].Metadata["stage"] != "s" {
		t.Errorf("Sandboxes = %+v", got)
	}
}
