// Package shared is the home of the runtime's domain: the packages the
// three functions share. It holds no code of its own, only the rule that
// keeps the domain free of its adapters, which imports_test.go enforces
// from `go list`:
//
//   - No production package under shared/ imports a function
//     (functions/...), the local stand-ins or the CDK (infra/...), the
//     benchmarks (bench/...), the API document (api/...), or Lambda's
//     event and runtime packages (github.com/aws/aws-lambda-go/...):
//     handlers translate events to domain calls, main packages wire.
//   - No production package under shared/ imports a concrete adapter
//     (the DynamoDB store, the E2B and local sandboxes, the offline model,
//     Secrets Manager, the engines) unless it uses it, as the allowlist in
//     imports_test.go states; the functions wire adapters to the domain's
//     interfaces, and each adapter's `var _` check stands beside it.
//   - No production package imports a test-support package (a package
//     whose name ends in "test": llmtest, e2btest, ledgertest, ...).
//   - Nothing under shared/, tests and test-support packages included,
//     imports a function, the infrastructure (infra/...) or the
//     benchmarks, directly or through what it imports. External _test
//     packages and test-support packages may import the embedded DynamoDB
//     (internal/dynamodblocal, and internal/awscalls it serves through):
//     the domain's integration tests run the real store on it, the
//     project's "real, not a toy" bar; a package's own (internal) tests
//     stay free of it.
//   - No function's bootstrap links a stand-in or a test-support package.
package shared
