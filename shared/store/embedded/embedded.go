// Package embedded serves an in-process DynamoDB-compatible API (minidyn)
// on loopback, so the real AWS SDK client talks to a real DynamoDB JSON
// endpoint on a machine without a cloud account. For the local stack and
// tests only.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/truora/minidyn/server"

	"github.com/commonly/runtime/shared/store"
)

// The region and the static dummy credentials of the server's clients
// (it checks no signature).
const (
	Region          = "us-east-1"
	AccessKeyID     = "local"
	SecretAccessKey = "local"
)

// EndpointVar is the SDK's standard variable for DynamoDB's endpoint.
const EndpointVar = "AWS_ENDPOINT_URL_DYNAMODB"

// AWSEnv is the environment with which the AWS SDK's default
// configuration chain reaches the DynamoDB at endpoint: the endpoint
// variable, the region and the dummy credentials.
func AWSEnv(endpoint string) map[string]string {
	return map[string]string{
		EndpointVar: endpoint, "AWS_REGION": Region,
		"AWS_ACCESS_KEY_ID": AccessKeyID, "AWS_SECRET_ACCESS_KEY": SecretAccessKey,
	}
}

// Server is a running embedded DynamoDB.
type Server struct {
	URL  string
	srv  *http.Server
	done chan error
}

// Start listens on addr ("127.0.0.1:0" for any free port) and serves.
func Start(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("embedded dynamodb: listen %s: %w", addr, err)
	}
	s := &Server{
		URL:  "http://" + ln.Addr().String(),
		srv:  &http.Server{Handler: server.NewServer(), ReadHeaderTimeout: 5 * time.Second},
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}

// AWSEnv is the environment with which the AWS SDK's default
// configuration chain reaches the server (AWSEnv of its URL).
func (s *Server) AWSEnv() map[string]string { return AWSEnv(s.URL) }

// Client returns a real SDK client for the server, with static dummy
// credentials (the server does not check signatures).
func (s *Server) Client(opts ...func(*dynamodb.Options)) *dynamodb.Client {
	cfg := aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
	}
	return dynamodb.NewFromConfig(cfg, append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(s.URL)
	}}, opts...)...)
}

// StartWithTables starts a server and creates the runtime's tables.
func StartWithTables(ctx context.Context, addr string, t store.Tables) (*Server, error) {
	s, err := Start(addr)
	if err != nil {
		return nil, err
	}
	if err := store.CreateTables(ctx, s.Client(), t); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}
