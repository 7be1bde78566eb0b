package sandbox

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestNewRecord(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	created := time.Date(2026, 1, 1, 1, 0, 0, 0, loc)
	r := NewRecord("e2b", "sbx1", Meta{RunID: "r", UserID: "u", InstallID: "i"}, created)

	if !r.CreatedAt.Equal(created) || r.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt = %v, want %v in UTC", r.CreatedAt, created)
	}
	if got := r.ExpiresAt.Sub(r.CreatedAt); got != 180*time.Second {
		t.Errorf("ExpiresAt - CreatedAt = %v, want 180s", got)
	}
	if r.Status != StatusRunning || r.Provider != "e2b" || r.SandboxID != "sbx1" ||
		r.RunID != "r" || r.UserID != "u" || r.InstallID != "i" {
		t.Errorf("record = %+v", r)
	}

	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"sandboxId", "provider", "runId", "userId", "installId", "createdAt", "expiresAt", "status"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	if _, ok := m["killedAt"]; ok {
		t.Errorf("killedAt present on a running record: %s", b)
	}
}

func TestRecordExpired(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := NewRecord("local", "x", Meta{}, created)
	tests := []struct {
		name   string
		status string
		at     time.Time
		want   bool
	}{
		{"fresh", StatusRunning, created, false},
		{"one ns before expiry", StatusRunning, created.Add(Lifetime - 1), false},
		{"at expiry", StatusRunning, created.Add(Lifetime), true},
		{"killed records never expire", StatusKilled, created.Add(time.Hour), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.Status = tt.status
			if got := r.Expired(tt.at); got != tt.want {
				t.Errorf("Expired = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCappedBuffer(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		writes    []string
		want      string
		truncated bool
	}{
		{"under", 10, []string{"abc", "def"}, "abcdef", false},
		{"exactly", 6, []string{"abc", "def"}, "abcdef", false},
		{"over in one write", 4, []string{"abcdef"}, "abcd" + TruncatedMarker, true},
		{"over across writes", 4, []string{"abc", "def", "ghi"}, "abcd" + TruncatedMarker, true},
		{"zero", 0, []string{"a"}, TruncatedMarker, true},
		{"split rune dropped", 4, []string{"ab€"}, "ab" + TruncatedMarker, true},
		{"whole rune kept", 5, []string{"ab€x"}, "ab€" + TruncatedMarker, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewCappedBuffer(tt.max)
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(w))
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String = %q, want %q", got, tt.want)
			}
			if b.Truncated() != tt.truncated {
				t.Errorf("Truncated = %v", b.Truncated())
			}
			if b.Len() > tt.max {
				t.Errorf("Len = %d > max %d", b.Len(), tt.max)
			}
		})
	}
}

func TestTrimPartialRune(t *testing.T) {
	for _, s := range []string{"", "a", "é", "€", "😀", "a😀"} {
		full := []byte(s)
		for cut := 0; cut <= len(full); cut++ {
			got := trimPartialRune(full[:cut])
			if !utf8.Valid(got) {
				t.Errorf("TrimPartialRune(%q[:%d]) = %q, not valid UTF-8", s, cut, got)
			}
			if !strings.HasPrefix(s, string(got)) || len(full[:cut])-len(got) > 3 {
				t.Errorf("TrimPartialRune(%q[:%d]) = %q cut too much", s, cut, got)
			}
		}
	}
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcdef", 4, "abcd"},
		{"ab€x", 4, "ab"}, // the split euro sign is dropped
		{"ab€x", 5, "ab€"},
		{"abc", 3, "abc"},
		{"abc", 0, ""},
	} {
		want := c.want + TruncatedMarker
		if got := Cut(c.s, c.n); got != want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, want)
		}
		if got := Cut([]byte(c.s), c.n); got != want {
			t.Errorf("Cut([]byte(%q), %d) = %q, want %q", c.s, c.n, got, want)
		}
	}
}

func TestLanguageValid(t *testing.T) {
	for l, want := range map[Language]bool{Python: true, JavaScript: true, "js": false, "": false, "typescript": false} {
		if l.Valid() != want {
			t.Errorf("%q.Valid() = %v", l, !want)
		}
	}
}

// An OutputWriter hands on whole characters: one split between writes
// waits for its end; invalid bytes pass as they are.
func TestOutputWriterKeepsCharactersWhole(t *testing.T) {
	var got []string
	w := NewOutputWriter(func(stream, text string) { got = append(got, stream+":"+text) }, Stdout)
	for _, p := range []string{"a\xc3", "\xa9b", "\xe2\x82", "\xac", "\xff"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if strings.Join(got, "|") != "stdout:a|stdout:éb|stdout:€|stdout:\xff" {
		t.Fatalf("%q", got)
	}
	if n, err := NewOutputWriter(nil, Stderr).Write([]byte("x")); n != 1 || err != nil {
		t.Fatalf("a writer without an Output: %d %v", n, err)
	}
}
