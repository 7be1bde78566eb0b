package tracing

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// OTLP is an OTLP/HTTP collector that spans go to, as protobuf.
type OTLP struct {
	// Endpoint is the traces URL (…/v1/traces).
	Endpoint string
	// Headers are sent with every export (a collector's API key).
	Headers map[string]string
	// Timeout bounds one batch's export with its retries (default 10 s).
	Timeout time.Duration
	// Gzip compresses the request bodies.
	Gzip bool
	// CAFile, ClientCertFile and ClientKeyFile are PEM files for TLS: the
	// roots the collector's certificate is checked against, and a client
	// certificate for mutual TLS.
	CAFile, ClientCertFile, ClientKeyFile string
}

const (
	defaultOTLPEndpoint = "http://localhost:4318/v1/traces"
	defaultOTLPTimeout  = 10 * time.Second
)

// otlpVariables are the OTEL_EXPORTER_OTLP_* settings read, each also as
// OTEL_EXPORTER_OTLP_TRACES_*, which wins (the OpenTelemetry
// specification's "OTLP Exporter Configuration").
var otlpVariables = []string{"ENDPOINT", "HEADERS", "TIMEOUT", "COMPRESSION", "PROTOCOL", "CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"}

// otlpEnv reads one setting: the traces variable, else the general one.
// The endpoint is the exception the specification makes: the general one
// is a base URL that /v1/traces is added to.
func otlpEnv(getenv func(string) string, name string) (string, bool) {
	if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
		return v, true
	}
	return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name)), false
}

// otlpFromEnv reads the OTLP collector the OTEL_EXPORTER_OTLP_* variables
// name; every problem is reported.
func otlpFromEnv(getenv func(string) string) (*OTLP, error) {
	c := &OTLP{Endpoint: defaultOTLPEndpoint, Timeout: defaultOTLPTimeout}
	var errs []error
	if v, traces := otlpEnv(getenv, "ENDPOINT"); v != "" {
		if !traces {
			v = strings.TrimSuffix(v, "/") + "/v1/traces"
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("tracing: OTLP endpoint %q: want an http or https URL", v))
		}
		c.Endpoint = v
	}
	if v, _ := otlpEnv(getenv, "HEADERS"); v != "" {
		h, err := parseOTLPHeaders(v)
		if err != nil {
			errs = append(errs, err)
		}
		c.Headers = h
	}
	if v, _ := otlpEnv(getenv, "TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			errs = append(errs, fmt.Errorf("tracing: OTLP timeout %q: want milliseconds above 0", v))
		}
		c.Timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, _ := otlpEnv(getenv, "COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.Gzip = true
	default:
		errs = append(errs, fmt.Errorf("tracing: OTLP compression %q is not supported (gzip or none)", v))
	}
	if v, _ := otlpEnv(getenv, "PROTOCOL"); v != "" && v != "http/protobuf" {
		errs = append(errs, fmt.Errorf("tracing: OTLP protocol %q is not supported (http/protobuf)", v))
	}
	c.CAFile, _ = otlpEnv(getenv, "CERTIFICATE")
	c.ClientCertFile, _ = otlpEnv(getenv, "CLIENT_CERTIFICATE")
	c.ClientKeyFile, _ = otlpEnv(getenv, "CLIENT_KEY")
	if (c.ClientCertFile == "") != (c.ClientKeyFile == "") {
		errs = append(errs, errors.New("tracing: OTLP client certificate and key go together"))
	}
	return c, errors.Join(errs...)
}

// parseOTLPHeaders reads "k1=v1,k2=v2", each key and value
// percent-encoded (the W3C Baggage format the specification names).
func parseOTLPHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		key, kerr := url.PathUnescape(strings.TrimSpace(k))
		val, verr := url.PathUnescape(strings.TrimSpace(v))
		if !ok || key == "" || kerr != nil || verr != nil {
			// The value may be a credential: name the header only.
			return nil, fmt.Errorf("tracing: OTLP headers: %q is not key=value", strings.TrimSpace(k))
		}
		h[key] = val
	}
	return h, nil
}

// transport is the HTTP transport for c: a copy of the default one (the
// exporter's shutdown closes its connections), with the TLS files when
// set.
func (c OTLP) transport() (http.RoundTripper, error) {
	tr := exportTransport()
	if c.CAFile == "" && c.ClientCertFile == "" {
		return tr, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP certificate: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tracing: OTLP certificate %s holds no PEM certificate", c.CAFile)
		}
	}
	if c.ClientCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.ClientCertFile, c.ClientKeyFile)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTLP client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	tr.TLSClientConfig = cfg
	return tr, nil
}

// exportTransport is the default transport with a write buffer that holds
// a whole export (~6 KiB a turn): the default 4 KiB split each request in
// two writes, and two wake-ups of the collector's side.
func exportTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.WriteBufferSize = 64 << 10
	return tr
}
