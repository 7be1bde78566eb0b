package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/commonly/runtime/shared/retry"
)

// otlpExporter sends spans to an OTLP/HTTP endpoint as protobuf
// (the OTLP specification's "OTLP/HTTP" section): one POST per batch,
// retried on 429, 502, 503 and 504 (honouring Retry-After) and on
// transport errors, with backoff, until the batch's timeout. It is the
// maintained exporter's behaviour over our own encoding (otlp_encode.go
// says why).
type otlpExporter struct {
	url     string
	header  http.Header
	client  *http.Client
	timeout time.Duration
	gzip    bool

	mu      sync.Mutex // one batch at a time: the encoder is reused
	enc     otlpEncoder
	last    int // the last request's size, to size the next one's buffer
	stopped bool
}

var _ sdktrace.SpanExporter = (*otlpExporter)(nil)

// otlpBackoff spaces the attempts of one batch: 100 ms doubling to 1 s.
var otlpBackoff = retry.Backoff{Base: 100 * time.Millisecond, Max: time.Second}

// otlpMaxResponse bounds what is read of a response body.
const otlpMaxResponse = 64 << 10

// otlpUserAgent names the exporter to collectors.
const otlpUserAgent = "commonly-runtime OTLP/HTTP protobuf exporter"

func newOTLPExporter(c OTLP, client *http.Client) (*otlpExporter, error) {
	if c.Endpoint == "" {
		return nil, errors.New("tracing: OTLP exporter without an endpoint")
	}
	if client == nil {
		tr, err := c.transport()
		if err != nil {
			return nil, err
		}
		client = &http.Client{Transport: tr}
	}
	h := http.Header{}
	for k, v := range c.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/x-protobuf")
	h.Set("User-Agent", otlpUserAgent)
	if c.Gzip {
		h.Set("Content-Encoding", "gzip")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = defaultOTLPTimeout
	}
	return &otlpExporter{url: c.Endpoint, header: h, client: client, timeout: timeout, gzip: c.Gzip}, nil
}

// ExportSpans encodes spans and sends them, retrying as the type says.
func (x *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	x.mu.Lock()
	if x.stopped {
		x.mu.Unlock()
		return errors.New("tracing: OTLP exporter is shut down")
	}
	// A fresh buffer each batch: the transport may still hold the last
	// request's body after it answered.
	body := x.enc.encode(make([]byte, 0, x.last+x.last/4), spans)
	x.last = len(body)
	x.mu.Unlock()
	if x.gzip {
		var err error
		if body, err = gzipped(body); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		wait, err := x.send(ctx, body)
		if err == nil || wait < 0 {
			return err
		}
		// The ceiling, without jitter: one exporter per process retries.
		wait = max(wait, otlpBackoff.Ceiling(attempt))
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err
		}
		if serr := retry.Sleep(ctx, wait); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// send makes one attempt. A retryable failure returns how long the
// endpoint asked to wait (0: the backoff decides); a final one, -1.
func (x *otlpExporter) send(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.url, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("tracing: OTLP request: %w", err)
	}
	for k, v := range x.header {
		req.Header[k] = v
	}
	resp, err := x.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, fmt.Errorf("tracing: OTLP export: %w", err)
		}
		return 0, fmt.Errorf("tracing: OTLP export: %w", err)
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(io.LimitReader(resp.Body, otlpMaxResponse))
	if err != nil {
		return 0, fmt.Errorf("tracing: OTLP export: reading the answer: %w", err)
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		if resp.Header.Get("Content-Type") == "application/x-protobuf" {
			if n, text, ok := partialSuccess(msg); ok && (n != 0 || text != "") {
				// As the SDK exporter does: a partial success is reported,
				// not retried.
				otel.Handle(fmt.Errorf("tracing: OTLP partial success: %d spans rejected: %s", n, text))
			}
		}
		return -1, nil
	case code == http.StatusTooManyRequests, code == http.StatusBadGateway, code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout:
		return retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("tracing: OTLP export to %s: %s", x.url, resp.Status)
	default:
		return -1, fmt.Errorf("tracing: OTLP export to %s: %s: %s", x.url, resp.Status, answerText(msg))
	}
}

// Shutdown stops the exporter; the batcher has flushed before it.
func (x *otlpExporter) Shutdown(context.Context) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stopped = true
	x.client.CloseIdleConnections()
	return nil
}

// retryAfter reads a Retry-After of seconds (the form collectors send);
// anything else leaves the wait to the backoff.
func retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// answerText is an error answer's body for the log: one line, bounded.
func answerText(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 256 {
		s = s[:256] + "…"
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

// partialSuccess reads ExportTraceServiceResponse.partial_success
// (field 1: rejected_spans = 1, error_message = 2).
func partialSuccess(b []byte) (rejected int64, msg string, ok bool) {
	valid := protoFields(b, func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num != 1 || typ != protowire.BytesType {
			return true
		}
		ok = true
		m, _ := protowire.ConsumeBytes(v) // checked by protoFields
		return protoFields(m, func(f protowire.Number, t protowire.Type, v []byte) bool {
			switch {
			case f == 1 && t == protowire.VarintType:
				n, _ := protowire.ConsumeVarint(v)
				rejected = int64(n)
			case f == 2 && t == protowire.BytesType:
				msg, _ = protowire.ConsumeString(v)
			}
			return true
		})
	})
	if !valid {
		return 0, "", false
	}
	return rejected, msg, ok
}

// protoFields calls each with every field of the message b: its number,
// type and value (the bytes after its tag, checked whole). It is false
// when b is malformed or each returns false.
func protoFields(b []byte, each func(protowire.Number, protowire.Type, []byte) bool) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		k := protowire.ConsumeFieldValue(num, typ, b[n:])
		if k < 0 || !each(num, typ, b[n:n+k]) {
			return false
		}
		b = b[n+k:]
	}
	return true
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func gzipped(b []byte) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(b) / 3)
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&out)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
