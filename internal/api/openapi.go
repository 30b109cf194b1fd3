package api

import (
	"net/http"
	"time"

	"github.com/pifleet/sessionlog/docs"
)

// OpenAPIRoute serves docs/openapi.yaml, the machine-readable contract of
// this API, to its clients: a route of no operation (nothing to do over
// NATS), under /v1 with the token of a reader, like the API it describes.
const OpenAPIRoute = "GET /v1/openapi.yaml"

// opOpenAPI is the route's name for scopes, audit and metrics.
const opOpenAPI = "openapi"

// The route is no operation of wire's, so its scope is added here, next to
// the rest of it (package variables are set before init runs).
var _ = func() bool { opScopes[opOpenAPI] = ScopeRead; return true }()

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.setNode(w.Header())
	status := http.StatusOK
	if _, err := s.checkHTTP(r, opOpenAPI); err != nil {
		status = s.writeError(w, opOpenAPI, err)
	} else {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(docs.OpenAPI)
	}
	s.metrics.observeRequest(transportHTTP, opOpenAPI, status, time.Since(start))
}
