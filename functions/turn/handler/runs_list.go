package handler

import (
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// runPageView is a page of runs as the API shows it.
type runPageView struct {
	Runs []runs.Summary `json:"runs"`
	// NextCursor is the following page's cursor; absent after the last.
	NextCursor string `json:"nextCursor,omitempty"`
}

func (h *Handler) myRuns(r *request) (events.APIGatewayV2HTTPResponse, error) {
	q, err := runsQuery(r.req)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	page, err := h.svc.MyRuns(r.ctx, r.caller, q)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, runPageView{page.Runs, page.Next}, nil), nil
}

func (h *Handler) userRuns(r *request) (events.APIGatewayV2HTTPResponse, error) {
	q, err := runsQuery(r.req)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	page, err := h.svc.UserRuns(r.ctx, r.caller, r.params["userId"], q)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, runPageView{page.Runs, page.Next}, nil), nil
}

// runsQuery reads ?limit= and ?cursor=; the service checks their values.
func runsQuery(req *events.APIGatewayV2HTTPRequest) (turns.RunsQuery, error) {
	q := turns.RunsQuery{Cursor: req.QueryStringParameters["cursor"]}
	if v, ok := req.QueryStringParameters["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n == 0 {
			return q, turns.Invalid("limit", "must be a whole number between 1 and %d", turns.MaxRunsPage)
		}
		q.Limit = n
	}
	return q, nil
}
