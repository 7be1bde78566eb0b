package console

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// tokenTTL is how long a page's token lasts; the page asks again before.
const tokenTTL = time.Hour

// token mints a token for the page: a user's ({"userId": ...}) or the
// service's ({"service": true}). JSON only, and only from a page of this
// origin: another site's page cannot send it without a preflight, which
// nothing here answers, and could not read the answer anyway.
func (c *Console) token(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "send {\"userId\": \"...\"} or {\"service\": true} as application/json", http.StatusUnsupportedMediaType)
		return
	}
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host {
			http.Error(w, "tokens are for this origin's pages", http.StatusForbidden)
			return
		}
	}
	var body struct {
		UserID  string `json:"userId"`
		Service bool   `json:"service"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Service == (body.UserID != "") {
		http.Error(w, "send {\"userId\": \"...\"} or {\"service\": true}", http.StatusBadRequest)
		return
	}
	now := c.cfg.Now()
	sub, scopes := body.UserID, []string(nil)
	if body.Service {
		sub, scopes = apigatewaylocal.ServiceSubject, []string{turns.ServiceScope}
	} else if !tablekeys.ValidID(sub) {
		http.Error(w, "userId "+tablekeys.IDRule, http.StatusBadRequest)
		return
	}
	tok, err := apigatewaylocal.MintToken(c.cfg.Secret, sub, scopes, tokenTTL, now)
	if err != nil {
		http.Error(w, "could not mint a token", http.StatusInternalServerError)
		return
	}
	writeJSON(w, map[string]any{"token": tok, "sub": sub, "service": body.Service, "expiresAt": now.Add(tokenTTL).UTC().Format(time.RFC3339)})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
