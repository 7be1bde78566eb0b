package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/internal/dynamodblocal"
)

// functionName is the turn function's, which its dispatches invoke.
const functionName = "livebench-turn"

// stack is the turn function as AWS runs it, on the local stack
// (infra/localstack): the API (the local gateway and its JWT check) in
// front of the production wiring (app.Build with the benchmark's
// options), each turn dispatched to an asynchronous invocation of its own
// (the Lambda stand-in), and the events function's route, its watch
// polling at poll. The worker's and the reader's DynamoDB calls are
// counted apart; each of the reader's GetItem is sized.
type stack struct {
	st     *localstack.Stack
	paced  *pacedModel
	worker *localstack.Counter
	client *turnstack.Client

	mu    sync.Mutex
	reads []int // the size of each item the reader read, bytes
	// written is when each word of the turn was first in a completed
	// write of the run.
	written map[string]time.Time
}

func startStack(ctx context.Context, poll time.Duration, words int, gap time.Duration) (s *stack, err error) {
	s = &stack{paced: newPacedModel(words, gap, turnstack.Model), written: map[string]time.Time{}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.st, err = localstack.Start(ctx, localstack.Config{
		Env:       turnstack.Env(map[string]string{"TURN_DISPATCH": app.DispatchLambda, "AWS_LAMBDA_FUNCTION_NAME": functionName}),
		Functions: []localstack.Function{localstack.Turn, localstack.Events}, Model: s.paced,
		TurnOptions: turnstack.Options(), Count: true, EventsPoll: poll, JWTSecret: []byte(turnstack.Secret),
	}); err != nil {
		return s, err
	}
	s.worker = s.st.Calls[localstack.Turn]
	s.worker.Observe(func(_ context.Context, o localstack.Observed) {
		if o.Err != nil {
			return
		}
		switch o.Op {
		case "UpdateItem", "PutItem", "TransactWriteItems":
			b, _ := json.Marshal(o.Input)
			s.noteWrite(b, time.Now())
		}
	})
	s.st.Calls[localstack.Events].Observe(func(_ context.Context, o localstack.Observed) {
		if out, ok := o.Output.(*dynamodb.GetItemOutput); ok && o.Op == "GetItem" {
			s.mu.Lock()
			s.reads = append(s.reads, int(dynamodblocal.ItemSize(out.Item)))
			s.mu.Unlock()
		}
	})
	if s.client, err = turnstack.NewClient(s.st.APIURL); err != nil {
		return s, err
	}
	if err := s.client.CreateInstall(ctx); err != nil {
		return s, fmt.Errorf("install: %w", err)
	}
	return s, nil
}

// noteWrite notes the words a completed write of the run carried.
func (s *stack) noteWrite(input []byte, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.paced.words {
		w := word(i)
		if _, ok := s.written[w]; !ok && bytes.Contains(input, []byte(w+" ")) {
			s.written[w] = at
		}
	}
}

// writtenAt is when word w was first written; false if it was not.
func (s *stack) writtenAt(w string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.written[w]
	return t, ok
}

// resetWrites forgets the last turn's words.
func (s *stack) resetWrites() {
	s.mu.Lock()
	s.written = map[string]time.Time{}
	s.mu.Unlock()
}

// takeReads returns the sizes of the items read since the last call.
func (s *stack) takeReads() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reads
	s.reads = nil
	return r
}

func (s *stack) close() {
	if s.st != nil {
		s.st.Close()
	}
}
