// Package localstack is the local stack, assembled in one place: the AWS
// stand-ins of infra/awslocal started, and the functions wired on them as
// AWS wires them, each by its own app.Build on the real SDK clients, or
// as its bootstrap under the Lambda Runtime Interface Emulator. `make
// run`, `make invoke`, `make bench`, `make load`, the local stack's tests
// and the functions' emulator tests all start it; Config says what
// differs between them:
//
//   - where a function runs: in this process (Functions), or as its
//     bootstrap under the emulator (Stack.Bootstrap);
//   - how a turn is dispatched: inline, or through the Lambda stand-in to
//     an invocation of its own, retried as Lambda retries a failed
//     asynchronous invocation (TURN_DISPATCH in Env; Retries,
//     RetryDelay); and where that invocation runs: in this process, or in
//     the turn's bootstrap, a worker in a process of its own that a test
//     may kill (Worker);
//   - the services that cannot run here: a scripted model (Model), the
//     secrets (Secrets); a fake E2B is named in Env;
//   - what is measured and injected: each function's DynamoDB calls
//     counted (Count), the runs stream's deliveries and the API's entry
//     wrapped (Faults), the clock (Now), the turn's extra tool and poster
//     (TurnOptions, app.Option).
//
// A change to how the stack is wired is made here, once.
package localstack
