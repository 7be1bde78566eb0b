// Package awslocal holds, one package each, the local stand-ins for the
// AWS services the runtime calls, so that the real SDK clients and the
// real handlers run on a machine without an AWS account or Docker:
//
//   - eventbridgelocal: EventBridge's PutEvents;
//   - apigatewaylocal: API Gateway's HTTP API with its JWT authorizer,
//     in front of the turn function's handler;
//   - lambdalocal: Lambda's Invoke API for a function's asynchronous
//     invocations of itself;
//   - secretsmanagerlocal: Secrets Manager's GetSecretValue;
//   - rie: the Lambda Runtime Interface Emulator running a bootstrap;
//   - runtimeapi: Lambda's Runtime API for one environment, which a real
//     bootstrap polls, showing each response as it arrives (a streamed
//     one chunk by chunk) and a runtime that died.
//
// The embedded DynamoDB (internal/dynamodblocal) and the recorder of AWS
// calls the stand-ins serve (internal/awscalls) live outside infra/, so
// that the domain's tests use them without importing the infrastructure.
//
// The local stack (infra/local, `make run`), `make invoke` (infra/invoke),
// the tests and the benchmarks all use these packages. None of them is
// ever linked into a function's bootstrap.
package awslocal
