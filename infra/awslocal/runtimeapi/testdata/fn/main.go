// Command fn is a function for the Runtime API stand-in's tests, built
// as the Makefile builds a bootstrap (-tags lambda.norpc): each event's
// "do" says what the invocation does.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Do string `json:"do"`
	// N parts are streamed; before each after the first, the function
	// GETs Gate+"/<i>", which the test answers when it has seen part i-1.
	N    int    `json:"n"`
	Gate string `json:"gate"`
	Ms   int    `json:"ms"`
}

func handle(ctx context.Context, e event) (any, error) {
	lc, _ := lambdacontext.FromContext(ctx)
	deadline, _ := ctx.Deadline()
	switch e.Do {
	case "echo":
		ext := ""
		if os.Getenv("FN_EXTENSION") != "" {
			ext = <-seen
		}
		return map[string]any{"extensionSaw": ext, "requestId": lc.AwsRequestID, "arn": lc.InvokedFunctionArn, "deadlineMs": deadline.UnixMilli(),
			"trace": os.Getenv("_X_AMZN_TRACE_ID"), "function": lambdacontext.FunctionName}, nil
	case "fail":
		return nil, errors.New("the function failed")
	case "panic":
		panic("the function panicked")
	case "exit":
		os.Exit(3)
	case "sleep":
		time.Sleep(time.Duration(e.Ms) * time.Millisecond)
		return map[string]string{"slept": "yes"}, nil
	case "stream", "stream-fail":
		pr, pw := io.Pipe()
		go func() {
			for i := range e.N {
				if i > 0 {
					resp, err := http.Get(fmt.Sprintf("%s/%d", e.Gate, i))
					if err != nil {
						_ = pw.CloseWithError(err)
						return
					}
					resp.Body.Close()
				}
				_, _ = fmt.Fprintf(pw, "part %d\n", i)
			}
			if e.Do == "stream-fail" {
				_ = pw.CloseWithError(errors.New("the stream broke"))
				return
			}
			_ = pw.Close()
		}()
		return &events.LambdaFunctionURLStreamingResponse{StatusCode: 200,
			Headers: map[string]string{"Content-Type": "text/plain"}, Body: pr}, nil
	}
	return nil, fmt.Errorf("unknown event %q", e.Do)
}

// seen are the INVOKE events' request ids the extension was given.
var seen = make(chan string, 16)

// extension registers an internal extension for INVOKE events, as the
// traces exporter does, and prints each event it gets.
func extension() {
	base := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2020-01-01/extension/"
	req, _ := http.NewRequest(http.MethodPost, base+"register", strings.NewReader(`{"events":["INVOKE"]}`))
	req.Header.Set("Lambda-Extension-Name", "fn-extension")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("Lambda-Extension-Identifier")
	go func() {
		for {
			req, _ := http.NewRequest(http.MethodGet, base+"event/next", nil)
			req.Header.Set("Lambda-Extension-Identifier", id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			var ev struct {
				EventType string `json:"eventType"`
				RequestID string `json:"requestId"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&ev)
			resp.Body.Close()
			fmt.Println("extension got", ev.EventType, ev.RequestID)
			if ev.EventType != "INVOKE" {
				return
			}
			seen <- ev.RequestID
		}
	}()
}

func main() {
	if os.Getenv("FN_INIT_FAIL") != "" {
		// A runtime's init error, as a runtime that fails before its
		// first invocation posts it.
		req, _ := http.NewRequest(http.MethodPost, "http://"+os.Getenv("AWS_LAMBDA_RUNTIME_API")+"/2018-06-01/runtime/init/error", nil)
		req.Header.Set("Lambda-Runtime-Function-Error-Type", "Runtime.ConfigError")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		os.Exit(1)
	}
	if os.Getenv("FN_EXTENSION") != "" {
		extension()
	}
	lambda.Start(handle)
}
