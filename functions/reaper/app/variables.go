// Package app will hold the reaper function's configuration and wiring
// (its own issue). Today it holds the variables of its deployed contract,
// which the CDK stack is checked against.
package app

// Variables are the environment variables the reaper function reads,
// sorted. The CDK stack declares exactly these on ReaperFunction (the E2B
// key also as E2B_API_KEY_SECRET_ARN, shared/secrets); whoever makes the
// function read another variable adds it here.
var Variables = []string{
	"E2B_API_KEY",
	"E2B_API_URL",
	"E2B_DOMAIN",
	"RUNS_TABLE",
	"SANDBOX",
	"SANDBOX_LIFETIME",
	"STAGE",
	"STATE_TABLE",
}
