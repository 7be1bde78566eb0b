package app

// Variables are the environment variables the turn function's
// configuration reads, sorted: what LoadConfig reads, and the rest of the
// deployed contract (team design notes). The CDK
// stack declares exactly these on the function (each secret X also as
// X_SECRET_ARN, shared/secrets), so that a variable read here cannot be
// missing from the template, and a test checks that LoadConfig reads
// nothing else. main also reads GOMAXPROCS (shared/gomaxprocs).
var Variables = []string{
	"AWS_LAMBDA_FUNCTION_NAME",
	"BROKER_TOKEN",
	"BROKER_URL",
	"COMMONLY_API_URL",
	"DAILY_SPEND_CAP_USD",
	"DO_RUNTIME_TIMEOUT",
	"DO_RUNTIME_TOKEN",
	"DO_RUNTIME_URL",
	"E2B_API_KEY",
	"E2B_API_URL",
	"E2B_DOMAIN",
	"E2B_SANDBOX_URL",
	"E2B_TEMPLATE",
	"GITHUB_API_URL",
	"HOSTED_ENGINE",
	"INSTALL_CACHE_TTL",
	"LLM_API_KEY",
	"LLM_BASE_URL",
	"LLM_MODE",
	"LLM_MODEL",
	"LLM_TIMEOUT",
	"PLAN_TURN_LIMITS",
	"PRICE_TABLE_FILE",
	"RUNS_TABLE",
	"SANDBOX",
	"SANDBOX_MAX_CONCURRENT",
	"SEARCH_API_KEY",
	"SEARCH_API_URL",
	"SEARCH_PROVIDER",
	"STAGE",
	"STATE_TABLE",
	"TURN_DISPATCH",
	"TURN_MAX_ATTEMPTS",
	"TURN_MAX_USD",
}
