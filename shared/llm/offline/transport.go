package offline

import (
	"bytes"
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

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	// The handler sees a server-side request: clone so the caller's is not
	// touched, and let it read the body as a server would.
	in := req.Clone(req.Context())
	if req.Body == nil {
		in.Body = http.NoBody
	}
	in.RequestURI = req.URL.RequestURI()

	rec := &recorder{header: http.Header{}}
	t.Handler.ServeHTTP(rec, in)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status:        strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()),
		Request:       req,
	}, nil
}

// recorder is the minimal http.ResponseWriter the handler writes into.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}
