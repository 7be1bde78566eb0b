package tracing

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// ForFunction is a Lambda function's tracing at its cold start: the
// configuration read from getenv (ConfigFromEnv, spans to X-Ray signed
// with awsCfg's credentials), the provider set up, and, when tracing is
// on, awsCfg's clients instrumented so that their calls are client
// spans. One helper, so that every function starts its tracing alike.
// In Lambda it also registers the traces extension, which waits at each
// invocation for the handler's end: the function's handler must be
// wrapped by WithFlush or WithFlushHTTP.
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
		// In Lambda, each invocation's spans go after its response, held
		// open by the traces extension (afterresponse.go); without it, each
		// invocation exports its own before it answers.
		if api := getenv("AWS_LAMBDA_RUNTIME_API"); api != "" {
			if err := tp.exportAfterResponseInLambda(ctx, api, slog.Default()); err != nil {
				slog.Default().Warn("traces are exported before each response", "err", err)
			}
		}
	}
	return tp, nil
}
