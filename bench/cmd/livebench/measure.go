package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/runs"
)

// result is one poll interval's measure.
type result struct {
	poll time.Duration
	// latencies are each word's delay, from leaving the model to its
	// text.delta reaching the client.
	latencies []time.Duration
	// toWrite is each word's part of it up to the write that carried it
	// (held, coalesced, flushed, written); fromWrite the rest (the poll,
	// the read, the stream to the client).
	toWrite, fromWrite []time.Duration
	// calls are the worker's DynamoDB calls over all turns; streaming the
	// time the answers took to stream.
	calls     localstack.Calls
	streaming time.Duration
	// reads are the sizes of the items the reader read; watching the
	// time the client watched.
	reads    []int
	watching time.Duration
}

// measure runs turns turns at each poll interval, one after another.
func measure(ctx context.Context, polls []time.Duration, turns, words int, gap time.Duration, progress io.Writer) ([]result, error) {
	var out []result
	for _, poll := range polls {
		s, err := startStack(ctx, poll, words, gap)
		if err != nil {
			return nil, err
		}
		r := result{poll: poll}
		before := s.worker.Snapshot()
		for i := range turns {
			if err := s.turn(ctx, &r); err != nil {
				s.close()
				return nil, fmt.Errorf("poll %s, turn %d: %w", poll, i+1, err)
			}
		}
		r.calls = s.worker.Snapshot().Sub(before)
		s.close()
		fmt.Fprintf(progress, "poll %s: %d words, p95 %s\n", poll, len(r.latencies), pct(r.latencies, 95))
		out = append(out, r)
	}
	return out, nil
}

// turn runs one turn and watches it from its acceptance to run.finished.
func (s *stack) turn(ctx context.Context, r *result) error {
	user, err := apigatewaylocal.MintToken([]byte(turnstack.Secret), turnstack.UserID, nil, time.Hour, time.Now())
	if err != nil {
		return err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.st.APIURL+"/v1/installs/"+turnstack.InstallID+"/turns", strings.NewReader(turnstack.TurnBody))
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", s.client.NewIdempotencyKey())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	var accepted struct {
		RunID string `json:"runId"`
	}
	err = json.NewDecoder(resp.Body).Decode(&accepted)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("submit: %d %v", resp.StatusCode, err)
	}
	s.takeReads()
	s.resetWrites()
	watchStart := time.Now()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, s.st.APIURL+"/v1/runs/"+accepted.RunID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+user)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("watch: %d", resp.StatusCode)
	}
	var text strings.Builder
	next, typ := 0, ""
	finished := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && !finished {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = line[len("event: "):]
		case strings.HasPrefix(line, "data: ") && typ == string(runs.EventTextDelta):
			at := time.Now()
			var d runs.TextDelta
			if err := json.Unmarshal([]byte(line[len("data: "):]), &d); err != nil {
				return err
			}
			text.WriteString(d.Text)
			// Every word this delta completed reached the client now.
			for strings.Contains(text.String(), word(next)+" ") {
				sent, ok := s.paced.sentAt(word(next))
				if !ok {
					return fmt.Errorf("%s arrived but was never sent", word(next))
				}
				r.latencies = append(r.latencies, at.Sub(sent))
				if w, ok := s.writtenAt(word(next)); ok {
					r.toWrite = append(r.toWrite, w.Sub(sent))
					r.fromWrite = append(r.fromWrite, at.Sub(w))
				}
				next++
			}
		case strings.HasPrefix(line, "data: ") && typ == string(runs.EventRunFinished):
			finished = true
		}
	}
	if !finished || next != s.paced.words {
		return fmt.Errorf("the stream ended after %d of %d words (finished %v): %v", next, s.paced.words, finished, sc.Err())
	}
	first, _ := s.paced.sentAt(word(0))
	last, _ := s.paced.sentAt(word(s.paced.words - 1))
	r.streaming += last.Sub(first)
	r.watching += time.Since(watchStart)
	r.reads = append(r.reads, s.takeReads()...)
	return nil
}

// pct is the p-th percentile (nearest rank).
func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}
