package ledger

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
)

// Facts is what the usage report needs of one finished run, kept on the
// user-day's ledger beside the run's counted cost (Counted.Facts), so
// that the day's digest is recomputed from the ledger alone, exactly
// once like the cost. Short attribute names: a pro user's ledger holds
// up to 200 of them.
type Facts struct {
	Engine   string `dynamodbav:"e,omitempty"`
	Plan     string `dynamodbav:"p,omitempty"`
	Kind     string `dynamodbav:"k,omitempty"` // errorKind; "" succeeded
	Refunded bool   `dynamodbav:"r,omitempty"`
	// Model is the model's whole cost; Input, Cached and Output its parts
	// when the run recorded them (they then sum to Model).
	Model   money.Micros `dynamodbav:"m,omitempty"`
	Input   money.Micros `dynamodbav:"mi,omitempty"`
	Cached  money.Micros `dynamodbav:"mc,omitempty"`
	Output  money.Micros `dynamodbav:"mo,omitempty"`
	Search  money.Micros `dynamodbav:"ws,omitempty"`
	Sandbox money.Micros `dynamodbav:"sb,omitempty"`
	// Tokens: prompt (cached included), cached prompt, completion.
	TokensIn     int64 `dynamodbav:"ti,omitempty"`
	TokensCached int64 `dynamodbav:"tc,omitempty"`
	TokensOut    int64 `dynamodbav:"to,omitempty"`
	// DurationMs is createdAt to completedAt: what the user waited.
	DurationMs int64 `dynamodbav:"d,omitempty"`
	// CodeRuns counts the run's commonly_run_code executions.
	CodeRuns int64 `dynamodbav:"x,omitempty"`
	// Resumed: a worker took the run over after another stopped; Lost is
	// what the stopped attempts may have cost beyond their record.
	Resumed bool         `dynamodbav:"rs,omitempty"`
	Lost    money.Micros `dynamodbav:"lm,omitempty"`
}

// factAttributes are the run attributes decodeFacts reads, besides
// ImageAttributes.
var factAttributes = []string{"plan", "status", "errorKind", "refunded", "createdAt", "completedAt", "tokens", "cost", "steps", "attempt"}

// factImage is the part of a run image decodeFacts reads.
type factImage struct {
	Engine      string      `dynamodbav:"engine"`
	Plan        string      `dynamodbav:"plan"`
	Status      runs.Status `dynamodbav:"status"`
	ErrorKind   string      `dynamodbav:"errorKind"`
	Refunded    bool        `dynamodbav:"refunded"`
	CreatedAt   time.Time   `dynamodbav:"createdAt"`
	CompletedAt *time.Time  `dynamodbav:"completedAt"`
	Tokens      runs.Tokens `dynamodbav:"tokens"`
	Cost        runs.Cost   `dynamodbav:"cost"`
	Attempts    int         `dynamodbav:"attempt"`
	Steps       []struct {
		ToolCalls []struct {
			CodeRun *struct{} `dynamodbav:"codeRun"`
		} `dynamodbav:"toolCalls"`
	} `dynamodbav:"steps"`
}

// decodeFacts reads a finished run's facts from its image; nil for a run
// not finished yet, or whose facts cannot be read (its cost still counts:
// the report shows it as not finished).
func decodeFacts(item map[string]types.AttributeValue) *Facts {
	// Most records are of open runs (admission, claim, checkpoints): look
	// at the status before decoding the rest.
	if st, ok := item["status"].(*types.AttributeValueMemberS); !ok || !runs.Status(st.Value).Final() {
		return nil
	}
	var im factImage
	if err := attributevalue.UnmarshalMap(item, &im); err != nil {
		return nil
	}
	f := &Facts{
		Engine: im.Engine, Plan: im.Plan, Kind: im.ErrorKind, Refunded: im.Refunded,
		Model: im.Cost.ModelMicros, Input: im.Cost.InputMicros, Cached: im.Cost.CachedInputMicros, Output: im.Cost.OutputMicros,
		Search: im.Cost.SearchMicros, Sandbox: im.Cost.SandboxMicros,
		TokensIn: im.Tokens.Prompt, TokensCached: im.Tokens.CachedPrompt, TokensOut: im.Tokens.Completion,
		Resumed: im.Attempts > 1, Lost: im.Cost.LostMicros,
	}
	if im.Status != runs.StatusSucceeded && f.Kind == "" {
		f.Kind = "unknown"
	}
	if im.CompletedAt != nil && !im.CreatedAt.IsZero() {
		f.DurationMs = max(im.CompletedAt.Sub(im.CreatedAt).Milliseconds(), 0)
	}
	for _, s := range im.Steps {
		for _, c := range s.ToolCalls {
			if c.CodeRun != nil {
				f.CodeRuns++
			}
		}
	}
	return f
}

// sameFacts compares two runs' facts (either may be nil).
func sameFacts(a, b *Facts) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
