package dynamodblocal

import (
	"encoding/json"
	"net/http"
	"strings"
)

// refuseUnsigned answers a request without a SigV4 Authorization header as
// DynamoDB does (the developer guide's error table: HTTP 400,
// MissingAuthenticationTokenException), and one whose header names no
// credential as IncompleteSignatureException; the rest goes to next. The
// server checks no signature: neither does DynamoDB Local, and IAM is not
// what the tests check here.
func refuseUnsigned(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		switch {
		case auth == "":
			writeAPIError(w, http.StatusBadRequest, "MissingAuthenticationTokenException",
				"Request must contain a valid (registered) AWS Access Key ID.")
		case !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !strings.Contains(auth, "Credential="):
			writeAPIError(w, http.StatusBadRequest, "IncompleteSignatureException",
				"The request signature does not conform to AWS standards.")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// writeAPIError writes an error of the DynamoDB JSON protocol.
func writeAPIError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{
		"__type": "com.amazonaws.dynamodb.v20120810#" + code, "message": message,
	})
}
