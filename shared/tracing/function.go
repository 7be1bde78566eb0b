package tracing

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// ForFunction is a Lambda function's tracing at its cold start: the
// configuration read from getenv (ConfigFromEnv, spans to X-Ray signed
// with awsCfg's credentials), the provider set up, and, when tracing is
// on, awsCfg's clients instrumented so that their calls are client
// spans. One helper, so that every function starts its tracing alike.
func ForFunction(ctx context.Context, getenv func(string) string, service string, awsCfg *aws.Config) (*Provider, error) {
	cfg, err := ConfigFromEnv(getenv, service, &XRay{Credentials: awsCfg.Credentials, Region: awsCfg.Region})
	if err != nil {
		return nil, err
	}
	tp, err := Setup(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if tp.Enabled() {
		InstrumentAWS(awsCfg)
	}
	return tp, nil
}
