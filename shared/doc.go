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
//   - Tests and test-support packages under shared/ never import a
//     function or the benchmarks. They may import the local AWS
//     stand-ins (infra/awslocal/...) from external _test packages and
//     test-support packages only: the domain's integration tests run the
//     real store on the embedded DynamoDB, the project's "real, not a toy"
//     bar, and a package's own (internal) tests stay free of them.
//   - No function's bootstrap links a stand-in or a test-support package.
package shared
