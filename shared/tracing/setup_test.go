package tracing_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/commonly/runtime/shared/tracing"
)

// BenchmarkSetupXRay is what tracing adds to a cold start in the
// function itself: the provider with X-Ray's OTLP exporter built from the
// environment (no connection is made until the first flush).
func BenchmarkSetupXRay(b *testing.B) {
	env := map[string]string{"TRACES_XRAY": "true", "AWS_REGION": "us-east-1", "TRACES_SAMPLE_RATIO": "0.05"}
	creds := aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""))
	ctx := context.Background()
	for b.Loop() {
		cfg, err := tracing.ConfigFromEnv(func(k string) string { return env[k] }, "commonly-turn", &tracing.XRay{Credentials: creds})
		if err != nil {
			b.Fatal(err)
		}
		tp, err := tracing.Setup(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		_ = tp.Shutdown(ctx)
	}
}
