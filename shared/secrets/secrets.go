// Package secrets resolves the runtime's secret configuration. In AWS a
// secret variable X is never a plain environment value: the function is
// given X_SECRET_ARN, a Secrets Manager secret read once at a cold start.
// Locally the plain X still works.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// ARNSuffix turns a secret variable's name into the name of the variable
// that holds its secret's ARN.
const ARNSuffix = "_SECRET_ARN"

// Names are the runtime's secret variables, sorted. The CDK stack declares
// each as X_SECRET_ARN and never gives X a value.
var Names = []string{"BROKER_TOKEN", "DO_RUNTIME_TOKEN", "E2B_API_KEY", "LLM_API_KEY", "SEARCH_API_KEY"}

// ARNVar is the variable that names X's secret.
func ARNVar(name string) string { return name + ARNSuffix }

// secretsAPI is the part of the Secrets Manager client Resolve uses.
type secretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ secretsAPI = (*secretsmanager.Client)(nil)

// Resolve returns a getenv in which each of names whose X_SECRET_ARN is
// set reads that secret's current string value; every other variable reads
// getenv. Each secret is fetched once, here, concurrently; the client is
// not called when no ARN is set, so local runs need no Secrets Manager.
// Errors name the variable, are joined, and never contain a secret's
// value.
func Resolve(ctx context.Context, getenv func(string) string, client secretsAPI, names ...string) (func(string) string, error) {
	type fetch struct {
		name, arn, value string
		err              error
	}
	var todo []*fetch
	var errs []error
	for _, name := range names {
		arn := strings.TrimSpace(getenv(ARNVar(name)))
		if arn == "" {
			continue
		}
		if strings.TrimSpace(getenv(name)) != "" {
			// Two sources for one secret: refuse rather than pick one.
			errs = append(errs, fmt.Errorf("%s and %s are both set; set one", name, ARNVar(name)))
			continue
		}
		todo = append(todo, &fetch{name: name, arn: arn})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(todo) == 0 {
		return getenv, nil
	}
	var wg sync.WaitGroup
	for _, f := range todo {
		wg.Go(func() { f.value, f.err = value(ctx, client, f.arn) })
	}
	wg.Wait()
	values := make(map[string]string, len(todo))
	for _, f := range todo {
		if f.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ARNVar(f.name), f.err))
			continue
		}
		values[f.name] = f.value
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return func(name string) string {
		if v, ok := values[name]; ok {
			return v
		}
		return getenv(name)
	}, nil
}

// value reads a secret's current string value.
func value(ctx context.Context, client secretsAPI, arn string) (string, error) {
	out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", arn, err)
	}
	if out.SecretString == nil || *out.SecretString == "" {
		// A binary or empty secret is a deployment mistake, not a key.
		return "", fmt.Errorf("secret %s has no string value", arn)
	}
	return *out.SecretString, nil
}
