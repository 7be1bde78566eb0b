package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/bench/internal/childproc"
	"github.com/commonly/runtime/bench/internal/procstat"
	"github.com/commonly/runtime/bench/internal/shapes"
	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
)

// turnSample is one watched turn.
type turnSample struct {
	TurnCPUMs   float64 `json:"turnCpuMs"`
	WallMs      float64 `json:"wallMs"`
	ModelMs     float64 `json:"modelMs"`
	OwnMs       float64 `json:"ownMs"`
	ModelCalls  int     `json:"modelCalls"`
	EventsCPUMs float64 `json:"eventsCpuMs"`
	Polls       int     `json:"polls"`
	ReadUnits   int64   `json:"readUnits"`
	// ItemBytes is the run item's size summed over the polls; MaxItem
	// the largest read.
	ItemBytes    int64   `json:"itemBytes"`
	MaxItem      int64   `json:"maxItemBytes"`
	ProcessUs    []int64 `json:"processUs"` // of the polls that wrote
	Events       int     `json:"events"`
	StreamBytes  int64   `json:"streamBytes"`
	StreamMs     float64 `json:"streamMs"`
	PromptTokens int64   `json:"promptTokens"`
}

func (t turnSample) String() string {
	return fmt.Sprintf("turn %.2f ms CPU, wall %.0f ms (model %.0f, own %.1f); events %.2f ms CPU, %d polls, %d read units, item up to %.1f KB, %d events",
		t.TurnCPUMs, t.WallMs, t.ModelMs, t.OwnMs, t.EventsCPUMs, t.Polls, t.ReadUnits, float64(t.MaxItem)/1024, t.Events)
}

// eventsStats is eventsproc's GET /stats.
type eventsStats struct {
	Proc  procstat.Usage `json:"proc"`
	Polls []struct {
		ItemBytes  int64 `json:"itemBytes"`
		ReadUnits  int64 `json:"readUnits"`
		WroteBytes int64 `json:"wroteBytes"`
		ProcessUs  int64 `json:"processUs"`
	} `json:"polls"`
}

// watchedTurn runs one turn of shape s through the API, watched from its
// admission to its end by one stream of the events process.
func (st *stack) watchedTurn(ctx context.Context, s shapes.Shape) (turnSample, error) {
	var t0, t1 turnstack.Stats
	var e0, e1 eventsStats
	if err := st.turn.Stats(ctx, &t0); err != nil {
		return turnSample{}, err
	}
	if err := st.events.Stats(ctx, &e0); err != nil { // also drops earlier polls
		return turnSample{}, err
	}
	calls0, model0 := st.pacer.ModelTime()

	st.seq++
	key := fmt.Sprintf("shapes-%d-%d", time.Now().UnixNano(), st.seq)
	body, _ := json.Marshal(map[string]string{"message": shapes.Message(s), "trigger": "bench"})
	type answer struct {
		status int
		body   []byte
		wall   time.Duration
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		start := time.Now()
		status, b, err := st.api.do(ctx, http.MethodPost, "/v1/installs/"+installID+"/turns", st.api.user,
			map[string]string{"Prefer": "wait=25", "Idempotency-Key": key}, body)
		done <- answer{status, b, time.Since(start), err}
	}()
	runID, err := st.runIDOf(ctx, key)
	if err != nil {
		return turnSample{}, err
	}
	stream, err := st.api.watch(ctx, runID)
	if err != nil {
		return turnSample{}, fmt.Errorf("watch %s: %w", runID, err)
	}
	a := <-done
	if a.err != nil {
		return turnSample{}, a.err
	}
	if a.status != http.StatusOK {
		return turnSample{}, fmt.Errorf("turn: %d %s", a.status, a.body)
	}
	var run runs.Run
	if err := json.Unmarshal(a.body, &run); err != nil {
		return turnSample{}, err
	}
	if run.Status != runs.StatusSucceeded || len(run.Steps) != s.Calls() {
		return turnSample{}, fmt.Errorf("the turn did not follow its shape: %s %s %q, %d steps", run.Status, run.ErrorKind, run.ErrorMessage, len(run.Steps))
	}
	if err := st.turn.Stats(ctx, &t1); err != nil {
		return turnSample{}, err
	}
	if err := st.events.Stats(ctx, &e1); err != nil {
		return turnSample{}, err
	}
	calls1, model1 := st.pacer.ModelTime()
	smp := turnSample{
		TurnCPUMs:   float64(t1.Proc.CPU-t0.Proc.CPU) / 1e6,
		WallMs:      ms(a.wall),
		ModelMs:     ms(model1 - model0),
		ModelCalls:  calls1 - calls0,
		EventsCPUMs: float64(e1.Proc.CPU-e0.Proc.CPU) / 1e6,
		Events:      stream.events,
		StreamBytes: stream.bytes,
		StreamMs:    ms(stream.elapsed),
	}
	smp.OwnMs = smp.WallMs - smp.ModelMs
	for _, st := range run.Steps {
		smp.PromptTokens = max(smp.PromptTokens, st.PromptTokens)
	}
	for _, p := range e1.Polls {
		smp.Polls++
		smp.ReadUnits += p.ReadUnits
		smp.ItemBytes += p.ItemBytes
		smp.MaxItem = max(smp.MaxItem, p.ItemBytes)
		if p.WroteBytes > 0 {
			smp.ProcessUs = append(smp.ProcessUs, p.ProcessUs)
		}
	}
	if smp.ModelCalls != s.Calls() {
		return smp, fmt.Errorf("%d model calls, the shape makes %d", smp.ModelCalls, s.Calls())
	}
	return smp, nil
}

// runIDOf finds the run the request with Idempotency-Key key admitted,
// as soon as it is: the admission writes the key's record with the run's
// id (the frontend gets the id from the 202; the turn process runs its
// turns inline, so the driver reads it from the table).
func (st *stack) runIDOf(ctx context.Context, key string) (string, error) {
	k := tablekeys.Idempotency(turnstack.UserID, installID, key)
	in := &dynamodb.GetItemInput{TableName: aws.String(turnstack.Tables.State), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		tablekeys.PK: &types.AttributeValueMemberS{Value: k.PK}, tablekeys.SK: &types.AttributeValueMemberS{Value: k.SK}}}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		out, err := st.plain.GetItem(ctx, in)
		if err != nil {
			return "", err
		}
		if v, ok := out.Item[tablekeys.RunID].(*types.AttributeValueMemberS); ok {
			return v.Value, nil
		}
	}
	return "", fmt.Errorf("no run admitted for %s in 10 s", key)
}

// watched is what a stream delivered.
type watched struct {
	events  int
	bytes   int64
	elapsed time.Duration
}

// watch reads a run's event stream to its end (run.finished, then the
// response's end).
func (c apiClient) watch(ctx context.Context, runID string) (watched, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.events+"/v1/runs/"+runID+"/events", nil)
	if err != nil {
		return watched{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.user)
	res, err := c.stream.Do(req)
	if err != nil {
		return watched{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return watched{}, fmt.Errorf("events: %d", res.StatusCode)
	}
	var w watched
	finished := false
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		w.bytes += int64(len(line) + 1)
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			w.events++
			finished = v == string(runs.EventRunFinished)
		}
	}
	w.elapsed = time.Since(start)
	if err := sc.Err(); err != nil {
		return w, err
	}
	if !finished {
		return w, fmt.Errorf("the stream ended after %d events without run.finished", w.events)
	}
	return w, nil
}

// eventsColdStarts starts the events process n times and times each from
// its start to the end of a stream of a finished run: its
// initialisation (configuration, the SDK's, the store's) and a first
// request (the token checked, the run read, its events written).
func (st *stack) eventsColdStarts(ctx context.Context, n int) ([]float64, error) {
	runID, err := st.finishedRun(ctx)
	if err != nil {
		return nil, err
	}
	var out []float64
	for range n {
		start := time.Now()
		p, err := childproc.Start(ctx, st.o.eventsproc, "-dynamo", st.db.URL)
		if err != nil {
			return nil, err
		}
		c := st.api
		c.events = p.Ready["url"]
		c.stream = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		_, err = c.watch(ctx, runID)
		elapsed := time.Since(start)
		p.Stop()
		if err != nil {
			return nil, err
		}
		out = append(out, ms(elapsed))
	}
	return out, nil
}

// finishedRun is a run of the answer shape, run to its end.
func (st *stack) finishedRun(ctx context.Context) (string, error) {
	st.seq++
	key := "shapes-cold-" + strconv.Itoa(st.seq)
	body, _ := json.Marshal(map[string]string{"message": shapes.Message(shapes.All[0]), "trigger": "bench"})
	status, b, err := st.api.do(ctx, http.MethodPost, "/v1/installs/"+installID+"/turns", st.api.user,
		map[string]string{"Prefer": "wait=25", "Idempotency-Key": key}, body)
	if err != nil {
		return "", err
	}
	var run runs.Run
	if status != http.StatusOK || json.Unmarshal(b, &run) != nil || !run.Status.Final() {
		return "", fmt.Errorf("turn: %d %s", status, b)
	}
	return run.RunID, nil
}
