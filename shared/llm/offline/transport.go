package offline

import (
	"io"
	"net/http"
	"strconv"
)

// BaseURL is the base URL to give the client with HTTPClient. The .invalid
// name never resolves, so a client built with it but without the
// in-process transport fails at once instead of reaching a network.
const BaseURL = "http://offline.invalid/v1"

// HTTPClient returns a client whose requests are served in-process by a
// new Handler, with no listening port:
//
//	llm.New(llm.Config{BaseURL: offline.BaseURL, HTTPClient: offline.HTTPClient()})
func HTTPClient() *http.Client {
	return &http.Client{Transport: Transport{Handler: NewHandler()}}
}

// Transport is an http.RoundTripper that serves each request by calling
// Handler directly.
type Transport struct {
	Handler http.Handler
}

// RoundTrip implements http.RoundTripper. The handler runs beside the
// caller and its body is read as it is written, so that a streamed
// answer arrives in pieces, as over a network.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	// The handler sees a server-side request: clone so the caller's is not
	// touched, and let it read the body as a server would.
	in := req.Clone(req.Context())
	if req.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = req.URL.RequestURI()

	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, body: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing
			_ = pw.Close()
			if req.Body != nil {
				req.Body.Close()
			}
		}()
		t.Handler.ServeHTTP(w, in)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		_ = pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          pr,
		ContentLength: -1,
		Request:       req,
	}, nil
}

// pipeWriter is the http.ResponseWriter the handler writes into: the
// status and headers are released at the first write, the body goes
// through a pipe the caller reads.
type pipeWriter struct {
	header http.Header
	sent   http.Header // the headers as they were at the status
	status int
	body   *io.PipeWriter
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status, w.sent = status, w.header.Clone()
	close(w.ready)
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush does nothing: every Write reaches the reader at once.
func (w *pipeWriter) Flush() {}
