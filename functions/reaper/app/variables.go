package app

// Variables are the environment variables the reaper function reads,
// sorted: exactly what LoadConfig reads (a test checks it). The CDK stack
// declares these on ReaperFunction (the E2B key also as
// E2B_API_KEY_SECRET_ARN, which main resolves through shared/secrets
// before LoadConfig); whoever makes the function read another variable
// adds it here.
var Variables = []string{
	"E2B_API_KEY",
	"E2B_API_URL",
	"E2B_DOMAIN",
	"RUNS_TABLE",
	"SANDBOX",
	"SANDBOX_LIFETIME",
	"STAGE",
	"STATE_TABLE",
	"TURN_FUNCTION_NAME",
}
