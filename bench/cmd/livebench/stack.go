package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/bench/internal/turnstack"
	eventshandler "github.com/commonly/runtime/functions/events/handler"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/turns"
)

// functionName is the turn function's, which its dispatches invoke.
const functionName = "livebench-turn"

// stack is the turn function as AWS runs it, on the stand-ins: the API
// (the local gateway and its JWT check) in front of the production
// wiring (turnstack.Build, app.Build), each turn dispatched to an
// asynchronous invocation of its own (the Lambda stand-in), and the
// events function's handler with its production watcher, polling at
// poll. The worker's and the reader's DynamoDB calls are counted apart;
// each of the reader's GetItem is sized.
type stack struct {
	api    *httptest.Server
	model  *httptest.Server
	paced  *pacedModel
	db     *dynamodblocal.Server
	lam    *lambdalocal.Server
	worker *turnstack.Counter
	reader *turnstack.Counter
	client *turnstack.Client

	mu    sync.Mutex
	reads []int // the size of each item the reader read, bytes
	// written is when each word of the turn was first in a completed
	// write of the run.
	written map[string]time.Time
}

func startStack(ctx context.Context, poll time.Duration, words int, gap time.Duration) (*stack, error) {
	s := &stack{worker: turnstack.NewCounter(), reader: turnstack.NewCounter(), paced: newPacedModel(words, gap, turnstack.Model)}
	s.model = httptest.NewServer(s.paced)
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", turnstack.Tables)
	if err != nil {
		s.close()
		return nil, err
	}
	s.db = db
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := turnstack.Config(s.model.URL, map[string]string{"TURN_DISPATCH": app.DispatchLambda, "AWS_LAMBDA_FUNCTION_NAME": functionName})
	if err != nil {
		s.close()
		return nil, err
	}
	var built *app.Built
	s.lam, err = lambdalocal.StartRunning(lambdalocal.RunConfig{Timeout: turns.MaxTurnDuration, Log: quiet,
		Run: func(ctx context.Context, payload []byte) error {
			_, err := built.Handler.Invoke(ctx, json.RawMessage(payload))
			return err
		}}, functionName)
	if err != nil {
		s.close()
		return nil, err
	}
	if built, err = turnstack.Build(ctx, cfg, app.Deps{Dynamo: db.Client(s.worker.Option()), Lambda: s.lam.Client(), Log: quiet}); err != nil {
		s.close()
		return nil, err
	}
	s.written = map[string]time.Time{}
	s.worker.Observe(func(_ context.Context, o turnstack.Observed) {
		if o.Err != nil {
			return
		}
		switch o.Op {
		case "UpdateItem", "PutItem", "TransactWriteItems":
			b, _ := json.Marshal(o.Input)
			s.noteWrite(b, time.Now())
		}
	})
	s.reader.Observe(func(_ context.Context, o turnstack.Observed) {
		if out, ok := o.Output.(*dynamodb.GetItemOutput); ok && o.Op == "GetItem" {
			s.mu.Lock()
			s.reads = append(s.reads, itemSize(out.Item))
			s.mu.Unlock()
		}
	})
	rs, err := store.New(store.Config{DB: db.Client(s.reader.Option()), Tables: turnstack.Tables})
	if err != nil {
		s.close()
		return nil, err
	}
	w, err := turns.NewWatcher(turns.WatcherConfig{Runs: rs, Slots: rs, Log: quiet})
	if err != nil {
		s.close()
		return nil, err
	}
	verify := eventshandler.VerifierFunc(func(_ context.Context, auth string) (map[string]string, error) {
		return apigatewaylocal.VerifyToken([]byte(turnstack.Secret), auth, time.Now())
	})
	events, err := eventshandler.New(eventshandler.Config{Watcher: w, Verifier: verify, Poll: poll, Log: quiet})
	if err != nil {
		s.close()
		return nil, err
	}
	s.api = httptest.NewServer(&apigatewaylocal.Gateway{Secret: []byte(turnstack.Secret), Invoke: built.Handler.HandleHTTP, Events: events, Log: quiet})
	if s.client, err = turnstack.NewClient(s.api.URL); err != nil {
		s.close()
		return nil, err
	}
	if err := s.client.CreateInstall(ctx); err != nil {
		s.close()
		return nil, fmt.Errorf("install: %w", err)
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
	if s.api != nil {
		s.api.Close()
	}
	if s.lam != nil {
		_ = s.lam.Close()
	}
	if s.db != nil {
		_ = s.db.Close()
	}
	if s.model != nil {
		s.model.Close()
	}
}

// itemSize is an item's size as DynamoDB counts it for read units:
// each attribute's name and value, strings and binaries by their bytes,
// a number by about one byte per two digits plus one
// (docs: CapacityUnitCalculations.html).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(v.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += valueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	}
	return 0
}
