package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

// testKeys are secrets of the shapes the runtime holds: a LiteLLM virtual
// key, an E2B key, and one with characters that URL and base64 encodings
// change.
var testKeys = []string{
	"sk-Zq8vN1xR4tLp0mYw7cKd2eHj",
	"e2b_5f1c9a0b7d3e2a4c6b8d0f1e3a5c7b9d",
	"k+/=Tz9&Q2%w!xPa~Lm",
}

// echoes are what an upstream may send back of a key: pieces (the audit
// saw a 10-character prefix get through), encodings, and the key inside
// larger encoded text.
func echoes(key string) map[string]string {
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + key))
	return map[string]string{
		"whole":               key,
		"prefix 10":           key[:10],
		"suffix 10":           key[len(key)-10:],
		"middle 10":           key[5:15],
		"upper case":          strings.ToUpper(key),
		"query escaped":       url.QueryEscape(key),
		"path escaped":        url.PathEscape(key),
		"base64":              base64.StdEncoding.EncodeToString([]byte(key)),
		"base64url":           base64.RawURLEncoding.EncodeToString([]byte(key)),
		"base64 of Basic":     basic,
		"base64 prefix":       base64.StdEncoding.EncodeToString([]byte(key[:9])),
		"base64 at offset 1":  base64.StdEncoding.EncodeToString([]byte("x" + key + "y")),
		"base64 at offset 2":  base64.StdEncoding.EncodeToString([]byte("xy" + key)),
		"hex":                 hex.EncodeToString([]byte(key)),
		"query-escaped piece": url.QueryEscape(key[2:14]),
	}
}

// Issue 9, item 15: every copy an upstream can echo of a configured
// secret, whole, in part or encoded, is redacted; the text around it is
// kept.
func TestScrubberRedactsEveryEcho(t *testing.T) {
	s := NewScrubber(testKeys...)
	for _, key := range testKeys {
		for name, echo := range echoes(key) {
			text := "upstream said: before " + echo + " after (status 401)"
			got := s.Scrub(text)
			if strings.Contains(got, echo) {
				t.Errorf("%.6s… %s: %q kept in %q", key, name, echo, got)
			}
			if !strings.HasPrefix(got, "upstream said: before ") || !strings.HasSuffix(got, " after (status 401)") || !strings.Contains(got, Redacted) {
				t.Errorf("%.6s… %s: surrounding text lost: %q", key, name, got)
			}
			// Scrub with the one secret is the same scrubber.
			if one := Scrub(text, key); strings.Contains(one, echo) {
				t.Errorf("Scrub(%.6s…) %s: %q kept", key, name, echo)
			}
		}
	}
}

// Text that holds no piece of a secret is returned as it is; pieces
// shorter than MinPiece do not identify a key and are kept.
func TestScrubberKeepsOtherText(t *testing.T) {
	s := NewScrubber(testKeys...)
	for _, text := range []string{
		"", "run_8515469973d454f6790a04a8 finished in 1234 ms", "model proxy error (status 502)",
		"sk-Zq and e2b_5 are not enough", "sk-Zq8vN1 and e2b_5f1c neither", "héllo wörld ✓ 日本語",
		strings.Repeat("abcdefghijklmnopqrstuvwxyz0123456789", 30),
	} {
		if got := s.Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q", text, got)
		}
	}
	if got := NewScrubber().Scrub("anything sk-Zq8vN1xR4tLp0mYw7cKd2eHj"); got != "anything sk-Zq8vN1xR4tLp0mYw7cKd2eHj" {
		t.Errorf("a scrubber without secrets changed %q", got)
	}
	// A short secret is redacted whole, never by pieces.
	if got := Scrub("token abc and abcd", "abc"); got != "token [redacted] and [redacted]d" {
		t.Errorf("short secret: %q", got)
	}
	// Adjacent and overlapping echoes become one redaction.
	key := testKeys[0]
	if got := Scrub(key+key[3:], key); got != Redacted {
		t.Errorf("overlapping echoes: %q", got)
	}
}

// The result stays valid UTF-8 when a secret with multi-byte characters
// is cut out of it.
func TestScrubberKeepsUTF8(t *testing.T) {
	key := "clé-secrète-ünïcode-42"
	got := Scrub("x "+key[1:12]+" y", key)
	if !strings.HasPrefix(got, "x ") || !strings.HasSuffix(got, " y") || strings.Contains(got, "secr") {
		t.Errorf("got %q", got)
	}
}

func BenchmarkScrubLogLine(b *testing.B) {
	s := NewScrubber(testKeys...)
	line := `{"time":"2026-12-02T12:00:00Z","level":"WARN","msg":"model call failed","runId":"run_8515469973d454f6790a04a8","userId":"user-1","step":1,"elapsedMs":1234,"errorKind":"llm_error"}`
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Scrub(line)
	}
}

// logStringer logs a secret through its own value.
type logStringer struct{ s string }

func (l logStringer) LogValue() slog.Value { return slog.StringValue("says " + l.s) }

// Every string a log line carries is scrubbed: the message, attributes,
// errors, values that log themselves, groups, attributes added with With,
// and other values as the JSON handler writes them.
func TestHandlerScrubsEveryLogLine(t *testing.T) {
	key := testKeys[0]
	var buf bytes.Buffer
	log := slog.New(NewScrubber(testKeys...).Handler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log = log.With("bound", "k="+key[:10])
	log.WithGroup("g").Info("msg "+key[3:13],
		"s", key[len(key)-10:],
		"err", errors.New("upstream said "+url.QueryEscape(key)),
		"lv", logStringer{base64.StdEncoding.EncodeToString([]byte(key))},
		slog.Group("inner", "x", "pre "+key+" post"),
		"list", []string{"a", key[:12]},
		"n", 42,
	)
	out := buf.String()
	for _, echo := range echoes(key) {
		if len(echo) >= MinPiece && strings.Contains(out, echo) {
			t.Errorf("log line holds %q: %s", echo, out)
		}
	}
	for _, want := range []string{`"msg":"msg `, `"n":42`, `"bound":"k=`, "upstream said", "says ", "pre " + Redacted + " post"} {
		if !strings.Contains(out, want) {
			t.Errorf("log line lost %q: %s", want, out)
		}
	}
	// A line with nothing to redact is written as it is, whatever its values.
	buf.Reset()
	slog.New(NewScrubber(testKeys...).Handler(slog.NewJSONHandler(&buf, nil))).Info("plain",
		"list", []string{"a", "b"}, "m", map[string]int{"x": 1}, "err", errors.New("boom"), "lv", logStringer{"ok"})
	if want := `"msg":"plain","list":["a","b"],"m":{"x":1},"err":"boom","lv":"says ok"}`; !strings.Contains(buf.String(), want) {
		t.Errorf("clean line = %s, want %s", buf.String(), want)
	}
	if NewScrubber().Handler(slog.DiscardHandler) != slog.DiscardHandler {
		t.Error("a scrubber without secrets wraps the handler")
	}
}

func TestScrub(t *testing.T) {
	if got := Scrub("token abc and abc", "abc"); got != "token [redacted] and [redacted]" {
		t.Errorf("Scrub = %q", got)
	}
	if got := Scrub("nothing", ""); got != "nothing" {
		t.Errorf("empty secret changed the text: %q", got)
	}
}

// Issue 23: the scrubber redacts secrets, not fragments other text shares
// with them. The local stack's request ids ("local-<ms>-<n>") share
// "local-" with its JWT secret, and a run id may share a few characters
// with a key: both are logged as they are, while the secret itself, and
// a piece long enough to stand for it, are still redacted.
func TestIDSharingAPrefixWithASecretSurvives(t *testing.T) {
	const secret = "commonly-local-dev-secret"
	s := NewScrubber(secret)
	for _, id := range []string{
		"local-1796315881398-21", "commonly-2", "local-dev1", "run_commonly-123",
		`{"requestId":"local-1796315881398-21","msg":"turn queued"}`,
	} {
		if got := s.Scrub(id); got != id {
			t.Errorf("Scrub(%q) = %q, want it unchanged", id, got)
		}
	}
	for text, want := range map[string]string{
		"token " + secret:              "token " + Redacted,
		"key commonly-local-de… (cut)": "key " + Redacted + "… (cut)",
	} {
		if got := s.Scrub(text); got != want {
			t.Errorf("Scrub(%q) = %q, want %q", text, got, want)
		}
	}
}
