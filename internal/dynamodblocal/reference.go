package dynamodblocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// ReferenceVar names the URL of a running Amazon DynamoDB Local (the
// reference: Amazon's own implementation) that New serves from instead of
// the embedded engine. `make test` starts one and runs the DynamoDB-facing
// packages again with it set (docs/local.md).
const ReferenceVar = "DYNAMODB_REFERENCE_URL"

// OnReference reports whether New serves from the reference DynamoDB Local.
func OnReference() bool { return referenceURL() != "" }

func referenceURL() string { return os.Getenv(ReferenceVar) }

// EmbeddedOnly skips t on the reference: the test exercises what only the
// embedded server has (a manual clock driving what DynamoDB Local times
// itself, minidyn's stream metadata), which why says.
func EmbeddedOnly(t testing.TB, why string) {
	t.Helper()
	if OnReference() {
		t.Skip("embedded server only: " + why)
	}
}

// reference is a Server's front of DynamoDB Local: a database of its own
// (DynamoDB Local keeps one per access key id and region), a reverse proxy
// that puts every request in it, the streams' poller and the TTL sweep.
type reference struct {
	target      *url.URL
	accessKeyID string
	db          *dynamodb.Client // straight to DynamoDB Local, in the server's database
	streams     *dynamodbstreams.Client
	log         *slog.Logger

	mu    sync.Mutex
	marks map[string]ttlMark // the sweep's deletes, by table and key
}

// NewReference starts a server in front of the DynamoDB Local at endpoint,
// with a database of its own: its clients, and every request it forwards,
// carry an access key id no other server has. What DynamoDB Local lacks is
// supplied as AWS supplies it: Subscribe polls the Streams API as Lambda's
// event source mapping does, and the TTL sweep deletes expired items and
// marks them, so that their stream records carry TTLIdentity.
func NewReference(cfg Config, endpoint string) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	target, err := url.Parse(endpoint)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("reference dynamodb: %s %q is not a URL", ReferenceVar, endpoint)
	}
	key, err := newAccessKeyID()
	if err != nil {
		return nil, err
	}
	creds := credentials.NewStaticCredentialsProvider(key, SecretAccessKey, "")
	awsCfg := aws.Config{Region: Region, Credentials: creds}
	ref := &reference{
		target: target, accessKeyID: key, log: cfg.Log, marks: map[string]ttlMark{},
		db:      dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) }),
		streams: dynamodbstreams.NewFromConfig(awsCfg, func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(endpoint) }),
	}
	s := &Server{cfg: cfg, accessKeyID: key, ref: ref}
	if err := s.serve(ref.proxy()); err != nil {
		return nil, err
	}
	return s, nil
}

// newAccessKeyID is a fresh access key id: letters and digits only, as
// DynamoDB Local requires.
func newAccessKeyID() (string, error) {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("reference dynamodb: access key id: %w", err)
	}
	return "ref" + hex.EncodeToString(b[:]), nil
}

// credentialKey is the access key id in a SigV4 Authorization header.
var credentialKey = regexp.MustCompile(`Credential=[^/,\s]*/`)

// proxy forwards each request to DynamoDB Local in this server's database:
// the Authorization header's access key id becomes the server's
// (DynamoDB Local reads the key but checks no signature), so that any
// client reaching the server's URL reaches its tables. A request without
// one goes as it came, to be refused.
func (r *reference) proxy() http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(r.target)
			if auth := pr.In.Header.Get("Authorization"); auth != "" {
				pr.Out.Header.Set("Authorization", credentialKey.ReplaceAllLiteralString(auth, "Credential="+r.accessKeyID+"/"))
			}
		},
	}
	return rp
}

// dropTables deletes the server's tables from DynamoDB Local when it
// closes: its memory grows with the tables it holds.
func (r *reference) dropTables() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	p := dynamodb.NewListTablesPaginator(r.db, &dynamodb.ListTablesInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("reference dynamodb: list tables: %w", err)
		}
		for _, name := range page.TableNames {
			if _, err := r.db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
				errs = append(errs, fmt.Errorf("reference dynamodb: delete table %s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}
