// Command eventsproc is the events function's process for `make memsize`
// and the scale model's watched turn (bench/cmd/turnshapes): its handler
// as functions/events/app wires it (the store, turns.Watcher, the SSE
// handler) served on loopback over plain HTTP, the real SDK client
// reaching DynamoDB at -dynamo, tokens checked with the local gateway's
// HS256 secret as the local stack checks them (infra/local), where AWS
// checks the issuer's RS256 keys. The driver puts this process alone in
// a cgroup holding it to a memory size's CPU.
//
//	eventsproc -dynamo URL -secret S
//
// It counts what each poll of a run costs: the GetItem, the item's size
// (DynamoDB's rule, dynamodblocal.ItemSize) and the read units a strongly
// consistent read of it takes (one per 4 KB or part), and the time from
// the item's arrival to the end of what the poll wrote to the stream
// (its decoding and the events' encoding: the delay this function adds
// to a chunk on its way to the client). It prints
// {"url":URL,"stats":URL} once it serves; GET {stats}/stats reports its
// CPU time and the polls since the last GET.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/commonly/runtime/bench/internal/procstat"
	"github.com/commonly/runtime/bench/internal/turnstack"
	eventsapp "github.com/commonly/runtime/functions/events/app"
	eventshandler "github.com/commonly/runtime/functions/events/handler"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/gomaxprocs"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "eventsproc:", err)
		os.Exit(1)
	}
}

func run() error {
	// As the events function's main does.
	gomaxprocs.Sequential(os.Getenv)
	dynamoURL := flag.String("dynamo", "", "DynamoDB endpoint (required)")
	secret := flag.String("secret", turnstack.Secret, "the local gateway's HS256 secret the tokens are signed with")
	flag.Parse()
	if *dynamoURL == "" {
		return errors.New("-dynamo is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for k, v := range dynamodblocal.AWSEnv(*dynamoURL) {
		os.Setenv(k, v)
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	rec := &recorder{}
	verify := eventshandler.VerifierFunc(func(_ context.Context, auth string) (map[string]string, error) {
		return apigatewaylocal.VerifyToken([]byte(*secret), auth, time.Now())
	})
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := eventsapp.Build(eventsapp.Config{Tables: turnstack.Tables},
		eventsapp.Deps{Dynamo: dynamodb.NewFromConfig(awsCfg, rec.option()), Verifier: verify, Log: log})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	statsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&timedWriter{ResponseWriter: w, rec: rec}, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	stats := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rec.take())
	}), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() { errc <- stats.Serve(statsLn) }()
	if err := json.NewEncoder(os.Stdout).Encode(map[string]string{
		"url": "http://" + ln.Addr().String(), "stats": "http://" + statsLn.Addr().String(),
	}); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = stats.Shutdown(sctx)
	return srv.Shutdown(sctx)
}

// Poll is one read of the run and what it wrote to the stream.
type Poll struct {
	ItemBytes int64 `json:"itemBytes"`
	ReadUnits int64 `json:"readUnits"`
	// WroteBytes is what the stream got before the next read; ProcessUs
	// the time from the item's arrival to the last of those writes (0
	// when it wrote nothing).
	WroteBytes int64 `json:"wroteBytes"`
	ProcessUs  int64 `json:"processUs"`
	arrived    time.Time
}

// Stats is GET /stats: the process's usage and the polls since the last
// GET.
type Stats struct {
	Proc  procstat.Usage `json:"proc"`
	Polls []Poll         `json:"polls"`
}

// recorder keeps the polls. The driver watches one stream at a time, so
// a write belongs to the latest poll.
type recorder struct {
	mu    sync.Mutex
	polls []Poll
}

func (r *recorder) take() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Stats{Proc: procstat.Self(), Polls: r.polls}
	r.polls = nil
	return s
}

// option records each GetItem once it returns: the item's size and read
// units. Sizing the item walks its attributes (microseconds), far below
// the SDK's decoding of it.
func (r *recorder) option() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchPolls",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleInitialize(ctx, in)
					if awsmiddleware.GetOperationName(ctx) == "GetItem" && err == nil {
						if res, ok := out.Result.(*dynamodb.GetItemOutput); ok {
							r.poll(dynamodblocal.ItemSize(res.Item))
						}
					}
					return out, md, err
				}), middleware.After)
		})
	}
}

// readUnits is what a strongly consistent read of an item of size bytes
// consumes: one unit per 4 KB or part, at least one.
func readUnits(size int64) int64 { return max(1, (size+4095)/4096) }

func (r *recorder) poll(size int64) {
	r.mu.Lock()
	r.polls = append(r.polls, Poll{ItemBytes: size, ReadUnits: readUnits(size), arrived: time.Now()})
	r.mu.Unlock()
}

func (r *recorder) wrote(n int) {
	now := time.Now()
	r.mu.Lock()
	if k := len(r.polls); k > 0 {
		p := &r.polls[k-1]
		p.WroteBytes += int64(n)
		p.ProcessUs = now.Sub(p.arrived).Microseconds()
	}
	r.mu.Unlock()
}

// timedWriter tells the recorder of each write to the stream.
type timedWriter struct {
	http.ResponseWriter
	rec *recorder
}

func (w *timedWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.rec.wrote(n)
	return n, err
}

func (w *timedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	w.rec.wrote(0)
}
