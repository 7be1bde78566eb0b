package awscalls

import (
	"bytes"
	"io"
	"net/http"
)

// maxBody bounds what Handler reads of a request to record it; DynamoDB's
// largest request (a 100-item transaction of 400 KB items) is far below.
const maxBody = 64 << 20

// Handler records each JSON-protocol request to next (the stand-in of the
// service with IAM prefix service) in rec, then serves it: what a stand-in
// wraps itself in when it is given a Recorder. A nil rec is next itself.
func Handler(service string, rec *Recorder, next http.Handler) http.Handler {
	if rec == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if target := r.Header.Get("X-Amz-Target"); target != "" && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
			_ = r.Body.Close()
			if err == nil {
				rec.Record(FromJSON(service, target, body))
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}
