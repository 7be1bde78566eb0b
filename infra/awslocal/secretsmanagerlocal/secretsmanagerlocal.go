// Package secretsmanagerlocal is the local stand-in for AWS Secrets
// Manager's GetSecretValue: the JSON 1.1 API (X-Amz-Target
// secretsmanager.GetSecretValue) on loopback, which the real SDK client
// reaches through AWS_ENDPOINT_URL_SECRETS_MANAGER. It serves string
// secrets by ARN (or name) as the API documents them, errors as
// {"__type","message"} with status 400, and records what it serves
// (Config.Calls), so the RIE tests see a bootstrap's X_SECRET_ARN reads.
package secretsmanagerlocal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/internal/loopback"
)

// EndpointVar is the SDK's standard variable for Secrets Manager's endpoint.
const EndpointVar = "AWS_ENDPOINT_URL_SECRETS_MANAGER"

// Config configures the stand-in.
type Config struct {
	// Addr is where to listen; "" is "127.0.0.1:0", any free port.
	Addr string
	// Secrets are the string secrets served, by ARN (or name).
	Secrets map[string]string
	// Calls, when set, records every request served (awscalls.Handler).
	Calls *awscalls.Recorder
}

// Server is a running stand-in.
type Server struct {
	URL     string
	secrets map[string]string
	http    *loopback.Server
}

// Start listens on cfg.Addr and serves until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s := &Server{secrets: cfg.Secrets}
	srv, err := loopback.Serve(cfg.Addr, awscalls.Handler("secretsmanager", cfg.Calls, s))
	if err != nil {
		return nil, fmt.Errorf("secrets manager stand-in: %w", err)
	}
	s.http, s.URL = srv, srv.URL
	return s, nil
}

// Client is a real SDK client for the server, with dummy credentials.
func (s *Server) Client() *secretsmanager.Client {
	return secretsmanager.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(s.URL) })
}

// Close stops the server.
func (s *Server) Close() error { return s.http.Close() }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(typ, msg string) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		fail("SerializationException", "not a JSON 1.1 request")
		return
	}
	if target := r.Header.Get("X-Amz-Target"); target != "secretsmanager.GetSecretValue" {
		fail("UnknownOperationException", "the local Secrets Manager serves GetSecretValue only, not "+target)
		return
	}
	var in struct {
		SecretID string `json:"SecretId"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.SecretID == "" {
		fail("InvalidParameterException", "SecretId is required")
		return
	}
	v, ok := s.secrets[in.SecretID]
	if !ok {
		fail("ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"ARN": in.SecretID, "Name": in.SecretID[strings.LastIndex(in.SecretID, ":")+1:],
		"VersionId": "a1b2c3d4-5678-90ab-cdef-EXAMPLE11111", "VersionStages": []string{"AWSCURRENT"},
		"CreatedDate":  float64(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Unix()),
		"SecretString": v,
	})
}
