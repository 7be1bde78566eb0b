package e2btest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	defaultTimeout = 15 // seconds: the API's default, not the SDKs' 300
	envdVersion    = "0.2.0"
	maxBody        = 1 << 20
	stateRunning   = "running"
)

// fakeSandbox is one sandbox. Guarded by Fake.mu.
type fakeSandbox struct {
	seq           int
	id            string
	templateID    string
	startedAt     time.Time
	endAt         time.Time
	metadata      map[string]string
	envVars       map[string]string
	allowInternet *bool
	secure        bool
	envdToken     string
	trafficToken  *string
	executions    int
	// dead is closed when the sandbox dies, cutting its streams.
	dead chan struct{}
}

// sweep kills the sandboxes whose end has come by the current clock.
// Caller holds f.mu.
func (f *Fake) sweep() {
	now := f.now()
	for id, s := range f.sandboxes {
		if !now.Before(s.endAt) {
			f.remove(id)
		}
	}
}

// remove kills a sandbox. Caller holds f.mu.
func (f *Fake) remove(id string) bool {
	s, ok := f.sandboxes[id]
	if !ok {
		return false
	}
	close(s.dead)
	delete(f.sandboxes, id)
	return true
}

// apiError writes the API's JSON Error body.
func apiError(w http.ResponseWriter, status int, errorCode, msg string) {
	body := map[string]any{"code": status, "message": msg}
	if errorCode != "" {
		body["error_code"] = errorCode
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// authorized checks X-API-Key, answering 401 when it is wrong.
func authorized(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("X-API-Key") != DefaultAPIKey {
		apiError(w, http.StatusUnauthorized, "", "Invalid API key, it must start with 'e2b_' prefix")
		return false
	}
	return true
}

// newSandboxBody is NewSandbox with pointers where absence matters.
type newSandboxBody struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	Secure              *bool             `json:"secure"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             map[string]any    `json:"network"`
	Metadata            map[string]any    `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
}

func (f *Fake) create(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, maxBody))
	call := CreateCall{}
	_ = json.Unmarshal(raw, &call.Body)
	call.Status, call.SandboxID = f.doCreate(w, r, raw)
	f.mu.Lock()
	f.creates = append(f.creates, call)
	f.mu.Unlock()
}

func (f *Fake) doCreate(w http.ResponseWriter, r *http.Request, raw []byte) (int, string) {
	if !authorized(w, r) {
		return http.StatusUnauthorized, ""
	}
	f.mu.Lock()
	if len(f.createFaults) > 0 {
		ft := f.createFaults[0]
		f.createFaults = f.createFaults[1:]
		f.mu.Unlock()
		apiError(w, ft.status, ft.errorCode, "injected failure")
		return ft.status, ""
	}
	f.mu.Unlock()

	var in newSandboxBody
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&in); err != nil {
		apiError(w, http.StatusBadRequest, "", "Error when parsing request: "+err.Error())
		return http.StatusBadRequest, ""
	}
	if in.TemplateID == "" {
		apiError(w, http.StatusBadRequest, "", "templateID is required")
		return http.StatusBadRequest, ""
	}
	timeout := int64(defaultTimeout)
	if in.Timeout != nil {
		timeout = *in.Timeout
	}
	if timeout < 0 || timeout > 1<<31-1 {
		apiError(w, http.StatusBadRequest, "", "timeout must be a non-negative int32")
		return http.StatusBadRequest, ""
	}
	metadata := map[string]string{}
	for k, v := range in.Metadata {
		s, ok := v.(string)
		if !ok {
			apiError(w, http.StatusBadRequest, "", fmt.Sprintf("metadata value of %q must be a string", k))
			return http.StatusBadRequest, ""
		}
		metadata[k] = s
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	now := f.now()
	s := &fakeSandbox{
		seq:           f.seq,
		id:            fmt.Sprintf("sbx%03d%s", f.seq, randomToken()[:8]),
		templateID:    in.TemplateID,
		startedAt:     now,
		endAt:         now.Add(time.Duration(timeout) * time.Second),
		metadata:      metadata,
		envVars:       in.EnvVars,
		allowInternet: in.AllowInternetAccess,
		secure:        in.Secure != nil && *in.Secure,
		dead:          make(chan struct{}),
	}
	if s.secure {
		s.envdToken = randomToken()
	}
	// A traffic token is issued when public traffic to the sandbox is closed.
	if allow, ok := in.Network["allowPublicTraffic"].(bool); ok && !allow {
		t := randomToken()
		s.trafficToken = &t
	}
	f.sandboxes[s.id] = s

	out := map[string]any{
		"templateID": s.templateID, "sandboxID": s.id, "clientID": "fakeclient", "envdVersion": envdVersion,
		"trafficAccessToken": s.trafficToken, "domain": f.domain,
	}
	if s.secure {
		out["envdAccessToken"] = s.envdToken
	}
	writeJSON(w, http.StatusCreated, out)
	return http.StatusCreated, s.id
}

func notFound(w http.ResponseWriter, id string) {
	apiError(w, http.StatusNotFound, "", fmt.Sprintf("sandbox %q doesn't exist or you don't have access to it", id))
}

func (f *Fake) kill(w http.ResponseWriter, r *http.Request) {
	if !authorized(w, r) {
		return
	}
	id := r.PathValue("id")
	f.mu.Lock()
	hook := f.beforeKill
	f.mu.Unlock()
	if hook != nil {
		hook(id)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweep()
	if status, ok := f.killFaults[id]; ok {
		delete(f.killFaults, id)
		if status != http.StatusNotFound {
			apiError(w, status, "internal_server_error", "injected failure")
			return
		}
		f.remove(id) // gone by itself: the 404 below is the truth
	}
	if !f.remove(id) {
		notFound(w, id)
		return
	}
	f.kills = append(f.kills, id)
	w.WriteHeader(http.StatusNoContent)
}

func (f *Fake) setTimeout(w http.ResponseWriter, r *http.Request) {
	if !authorized(w, r) {
		return
	}
	var in struct {
		Timeout *int64 `json:"timeout"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&in); err != nil || in.Timeout == nil ||
		*in.Timeout < 0 || *in.Timeout > 1<<31-1 {
		apiError(w, http.StatusBadRequest, "", "timeout must be a non-negative int32")
		return
	}
	id := r.PathValue("id")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweep()
	s, ok := f.sandboxes[id]
	if !ok {
		notFound(w, id)
		return
	}
	// Absolute from now: it can shorten as well as extend.
	s.endAt = f.now().Add(time.Duration(*in.Timeout) * time.Second)
	w.WriteHeader(http.StatusNoContent)
}

// list serves the v2 list. Every sandbox of the fake is running (none
// pauses); filters it does not model are refused rather than ignored.
func (f *Fake) list(w http.ResponseWriter, r *http.Request) {
	if !authorized(w, r) {
		return
	}
	f.mu.Lock()
	hook, n := f.beforeList, f.calls[CallList]
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	f.mu.Lock()
	status := f.takeListFault()
	f.mu.Unlock()
	if status != 0 {
		apiError(w, status, "internal_server_error", "injected failure")
		return
	}
	q := r.URL.Query()
	for _, p := range []string{"startedAfter", "template"} {
		if q.Has(p) {
			apiError(w, http.StatusBadRequest, "", "the fake does not model "+p)
			return
		}
	}
	var want url.Values
	if m := q.Get("metadata"); m != "" {
		var err error
		if want, err = url.ParseQuery(m); err != nil {
			apiError(w, http.StatusBadRequest, "", "invalid metadata: "+err.Error())
			return
		}
	}
	running := true
	if s := q.Get("state"); s != "" {
		running = false
		for st := range strings.SplitSeq(s, ",") {
			if st != "running" && st != "paused" {
				apiError(w, http.StatusBadRequest, "", fmt.Sprintf("invalid state %q", st))
				return
			}
			running = running || st == stateRunning
		}
	}
	order := q.Get("order")
	if order == "" {
		order = "desc"
	}
	if order != "asc" && order != "desc" {
		apiError(w, http.StatusBadRequest, "", "order must be asc or desc")
		return
	}
	limit := 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			apiError(w, http.StatusBadRequest, "", "limit must be within 1-100")
			return
		}
		limit = n
	}
	offset, ok := decodeToken(q.Get("nextToken"))
	if !ok {
		apiError(w, http.StatusBadRequest, "", "invalid nextToken")
		return
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweep()
	var rows []*fakeSandbox
	for _, s := range f.sandboxes {
		if running && matches(s.metadata, want) {
			rows = append(rows, s)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if !a.startedAt.Equal(b.startedAt) {
			return a.startedAt.Before(b.startedAt) == (order == "asc")
		}
		return (a.seq < b.seq) == (order == "asc")
	})
	if running {
		w.Header().Set("X-Total-Running", strconv.Itoa(len(rows)))
	}
	page := []map[string]any{}
	for i := offset; i < len(rows) && i < offset+limit; i++ {
		s := rows[i]
		page = append(page, map[string]any{
			"templateID": s.templateID, "sandboxID": s.id, "clientID": "fakeclient",
			"startedAt": s.startedAt.UTC().Format(time.RFC3339Nano), "endAt": s.endAt.UTC().Format(time.RFC3339Nano),
			"cpuCount": 2, "memoryMB": 512, "diskSizeMB": 0, "metadata": s.metadata, "state": stateRunning,
			"envdVersion": envdVersion, "volumeMounts": []any{},
		})
	}
	if offset+limit < len(rows) {
		w.Header().Set("X-Next-Token", encodeToken(offset+limit))
	}
	writeJSON(w, http.StatusOK, page)
}

// matches reports whether metadata holds every wanted pair (AND).
func matches(metadata map[string]string, want url.Values) bool {
	for k, vs := range want {
		for _, v := range vs {
			if got, ok := metadata[k]; !ok || got != v {
				return false
			}
		}
	}
	return true
}

// Tokens are opaque to clients; the fake hides an offset in them.
func encodeToken(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("off:" + strconv.Itoa(offset)))
}

func decodeToken(tok string) (int, bool) {
	if tok == "" {
		return 0, true
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || !strings.HasPrefix(string(b), "off:") {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(string(b), "off:"))
	return n, err == nil && n >= 0
}
