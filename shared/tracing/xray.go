package tracing

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// XRay is where spans go on AWS: X-Ray's OTLP endpoint, signed with the
// function's role (docs/operations.md, "Tracing": why not the ADOT layer).
type XRay struct {
	Region      string
	Credentials aws.CredentialsProvider
	// Endpoint overrides https://xray.<region>.amazonaws.com (tests).
	Endpoint string
}

// xraySigningName is the SigV4 service name of X-Ray's OTLP endpoint.
const xraySigningName = "xray"

func (x *XRay) endpointURL() string {
	if x.Endpoint != "" {
		return x.Endpoint + "/v1/traces"
	}
	return fmt.Sprintf("https://xray.%s.amazonaws.com/v1/traces", x.Region)
}

func (x *XRay) check() error {
	if x.Region == "" {
		return errors.New("tracing: X-Ray needs a region (AWS_REGION)")
	}
	if x.Credentials == nil {
		return errors.New("tracing: X-Ray needs credentials")
	}
	return nil
}

// client is the exporter's HTTP client: every request signed with SigV4,
// each attempt bounded as the flush is.
func (x *XRay) client() *http.Client {
	return &http.Client{
		Transport: &sigv4Transport{next: exportTransport(), signer: v4.NewSigner(), creds: x.Credentials, region: x.Region},
		Timeout:   FlushTimeout,
	}
}

// sigv4Transport signs each request with the credentials' current value
// (the SDK's provider caches and refreshes them).
type sigv4Transport struct {
	next   http.RoundTripper
	signer *v4.Signer
	creds  aws.CredentialsProvider
	region string
}

func (t *sigv4Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	creds, err := t.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: X-Ray credentials: %w", err)
	}
	signed := req.Clone(ctx)
	if err := t.signer.SignHTTP(ctx, creds, signed, hex.EncodeToString(sum[:]), xraySigningName, t.region, time.Now().UTC()); err != nil {
		return nil, fmt.Errorf("tracing: sign the export: %w", err)
	}
	return t.next.RoundTrip(signed)
}

// readBody reads the request's body and leaves a fresh copy on it.
func readBody(req *http.Request) ([]byte, error) {
	if req.GetBody == nil {
		if req.Body == nil {
			return nil, nil
		}
		return nil, errors.New("tracing: an export request without GetBody cannot be signed")
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	if req.Body, err = req.GetBody(); err != nil {
		return nil, err
	}
	return b, nil
}
