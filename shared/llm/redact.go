package llm

import (
	"regexp"

	"github.com/commonly/runtime/shared/redact"
	"github.com/commonly/runtime/shared/textcap"
)

// maxDetail bounds CallError.Detail, which is logged.
const maxDetail = 1000

// credentialPattern matches what looks like a bearer credential or an
// OpenAI-style key, in case a proxy or transport error quotes one that is
// not this client's own.
var credentialPattern = regexp.MustCompile(`(?i)bearer\s+\S+|\bsk-[A-Za-z0-9._\-]{4,}`)

// scrub makes upstream text safe to log: the client's API key (every
// copy and piece of it) and anything shaped like a credential are
// removed, and the result is bounded.
func (c *Client) scrub(s string) string {
	s = c.scrubber.Scrub(s)
	s = credentialPattern.ReplaceAllString(s, redact.Redacted)
	return textcap.Bytes(s, maxDetail)
}
