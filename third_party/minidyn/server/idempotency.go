package server

import (
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// idempotencyWindow is how long DynamoDB remembers a TransactWriteItems
// ClientRequestToken after the first request that used it completed.
const idempotencyWindow = 10 * time.Minute

// maxClientRequestTokenLen is the API's length limit on ClientRequestToken.
const maxClientRequestTokenLen = 36

// WithClock sets the clock of the ClientRequestToken window (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// transactToken is a committed transaction's token: what it was sent with
// and when it completed.
type transactToken struct {
	params    [sha256.Size]byte
	completed time.Time
}

// transactTokens remembers the tokens of committed transactions for
// idempotencyWindow, in completion order (so forgetting is from the front).
type transactTokens struct {
	byToken map[string]transactToken
	order   []string
}

// transactParams is a digest of a request's parameters other than its token:
// the SDK's retry of a call sends the same bytes, so the same digest.
func transactParams(input *TransactWriteItemsInput) [sha256.Size]byte {
	p := *input
	p.ClientRequestToken = nil
	b, _ := json.Marshal(p) // of decoded JSON: cannot fail
	return sha256.Sum256(b)
}

// validateClientRequestToken checks the token's length as the API does.
func validateClientRequestToken(token *string) error {
	if token == nil {
		return nil
	}
	if n := len(*token); n < 1 || n > maxClientRequestTokenLen {
		rel, limit := "less than or equal to", maxClientRequestTokenLen
		if n < 1 {
			rel, limit = "greater than or equal to", 1
		}
		return validationError("1 validation error detected: Value '" + *token + "' at 'clientRequestToken' failed to satisfy constraint: Member must have length " + rel + " " + strconv.Itoa(limit))
	}
	return nil
}

// repeated reports whether input repeats a transaction committed with its
// token within the window (it is then answered as a success and not applied
// again), or an error if the token came with other parameters. Callers must
// hold c.mu.
func (c *Client) repeated(input *TransactWriteItemsInput, now time.Time) (bool, error) {
	c.forgetTokens(now)
	if input.ClientRequestToken == nil {
		return false, nil
	}
	seen, ok := c.tokens.byToken[*input.ClientRequestToken]
	if !ok {
		return false, nil
	}
	if seen.params != transactParams(input) {
		return false, &ddbtypes.IdempotentParameterMismatchException{
			Message: aws.String("Request has the same client token as a previous request, but with different parameters"),
		}
	}
	return true, nil
}

// remember keeps a committed transaction's token. Callers must hold c.mu.
func (c *Client) remember(input *TransactWriteItemsInput, completed time.Time) {
	if input.ClientRequestToken == nil {
		return
	}
	if c.tokens.byToken == nil {
		c.tokens.byToken = map[string]transactToken{}
	}
	token := *input.ClientRequestToken
	c.tokens.byToken[token] = transactToken{params: transactParams(input), completed: completed}
	c.tokens.order = append(c.tokens.order, token)
}

// forgetTokens drops the tokens whose window has ended by now. Callers must
// hold c.mu.
func (c *Client) forgetTokens(now time.Time) {
	t := &c.tokens
	for len(t.order) > 0 {
		token := t.order[0]
		seen, ok := t.byToken[token]
		if ok && now.Sub(seen.completed) < idempotencyWindow {
			return
		}
		if ok {
			delete(t.byToken, token)
		}
		t.order = t.order[1:]
	}
}
