package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const transportHTTP = "http"

// routes builds the mux with Go 1.22 method and wildcard patterns.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, r := range s.httpRoutes() {
		mux.Handle(r.pattern, r.h)
	}
	if c := s.cfg.Console; c != nil {
		mux.Handle("GET /console/", s.named(c))
		mux.Handle("GET /console", s.named(c))
	}
	mux.HandleFunc("/", s.handleNoRoute)
	return mux
}

// httpRoute is one pattern of the mux and its handler.
type httpRoute struct {
	pattern string
	h       http.Handler
}

// httpRoutes are the routes of wire: every operation, watch, the OpenAPI
// document and the probes, in that order (/metrics not with
// Config.MetricsElsewhere).
func (s *Server) httpRoutes() []httpRoute {
	var out []httpRoute
	for i := range ops {
		out = append(out, httpRoute{ops[i].Route(), s.httpOp(&ops[i])})
	}
	out = append(out, httpRoute{wire.OpWatch.Route(), http.HandlerFunc(s.handleWatch)})
	out = append(out, httpRoute{OpenAPIRoute, http.HandlerFunc(s.handleOpenAPI)})
	return append(out, s.probeRoutes(false)...)
}

// probeRoutes are wire's probes; /metrics among them with probesOnly (the
// metrics listener's) or without Config.MetricsElsewhere.
func (s *Server) probeRoutes(probesOnly bool) []httpRoute {
	var out []httpRoute
	probes := map[string]http.Handler{
		"GET /healthz": http.HandlerFunc(s.handleHealthz),
		"GET /readyz":  http.HandlerFunc(s.handleReadyz),
		"GET /metrics": promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{Registry: s.metrics.reg}),
	}
	for _, p := range wire.Probes {
		h, ok := probes[p]
		if !ok {
			panic("api: no handler for wire's probe " + p) // a programming error, caught by every test
		}
		if p == "GET /metrics" && s.cfg.MetricsElsewhere && !probesOnly {
			continue
		}
		out = append(out, httpRoute{p, s.named(h)})
	}
	return out
}

// named sets Pi-Node on every reply of h (docs/API.md: every reply names
// its node).
func (s *Server) named(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.setNode(w.Header())
		h.ServeHTTP(w, r)
	})
}

// handleNoRoute answers unknown paths with the JSON error shape; under /v1
// the token is checked first, so routes are not probed without it.
func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	s.setNode(w.Header())
	err := fmt.Errorf("no route %s %s: %w", r.Method, r.URL.Path, wire.ErrNotFound)
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		if _, aerr := s.authenticate(s.tokens.Load(), r); aerr != nil {
			_, err = s.checkHTTP(r, "unknown") // audited
		}
	}
	s.metrics.observeRequest(transportHTTP, "unknown", s.writeError(w, "unknown", err), 0)
}

// setNode names this node in a reply's headers (hdrNode).
func (s *Server) setNode(h http.Header) {
	if s.cfg.NodeName != "" {
		h.Set(hdrNode, s.cfg.NodeName)
	}
}

// httpOp serves one operation: token, body, path and query into a request,
// then the shared call, then the reply or the mapped error.
func (s *Server) httpOp(o *op) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.setNode(w.Header())
		if err := s.reqLim.acquire(); err != nil {
			s.metrics.observeRequest(transportHTTP, o.Name, s.writeError(w, o.Name, err), time.Since(start))
			return
		}
		defer s.reqLim.release()
		status := s.serveOp(w, r, o)
		s.metrics.observeRequest(transportHTTP, o.Name, status, time.Since(start))
	}
}

func (s *Server) serveOp(w http.ResponseWriter, r *http.Request, o *op) int {
	p, err := s.checkHTTP(r, o.Name)
	if err != nil {
		return s.writeError(w, o.Name, err)
	}
	req, err := s.httpRequest(w, r, o)
	if err != nil {
		status := s.writeError(w, o.Name, err)
		s.auditAdmin(p, transportHTTP, o.Name, status, err)
		return status
	}
	rep, err := s.call(withPrincipal(r.Context(), p), o, req)
	if err != nil {
		status := s.writeError(w, o.Name, err)
		s.auditAdmin(p, transportHTTP, o.Name, status, err)
		return status
	}
	s.auditAdmin(p, transportHTTP, o.Name, o.Status, nil)
	if rep.servedBy != "" {
		w.Header().Set(wire.HeaderServedBy, rep.servedBy)
	}
	if o.Status == http.StatusNoContent {
		w.WriteHeader(o.Status)
		return o.Status
	}
	body, ctype := rep.raw, rep.ctype
	if rep.value != nil {
		if body, err = wire.EncodeJSON(rep.value); err != nil {
			return s.writeError(w, o.Name, err)
		}
		ctype = wire.ContentTypeJSON
	}
	w.Header().Set("Content-Type", ctype)
	if o.Method == http.MethodGet {
		for k, v := range s.readHeaders(*rep.fresh) {
			w.Header()[k] = v
		}
	}
	if rep.filename != "" {
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", rep.filename))
	}
	w.WriteHeader(o.Status)
	_, _ = w.Write(body)
	return o.Status
}

// httpRequest reads the body (bounded) and decodes it, the query and the
// path into o's request.
func (s *Server) httpRequest(w http.ResponseWriter, r *http.Request, o *op) (any, error) {
	var data []byte
	switch o.Body {
	case wire.JSONBody, wire.JSONLBody:
		limit := s.cfg.MaxBody
		if o.Body == wire.JSONLBody {
			limit = s.cfg.MaxImportBody
		}
		var err error
		if data, err = readBody(w, r, limit); err != nil {
			return nil, err
		}
	}
	return o.decode(data, r.PathValue, r.URL.Query())
}

// readBody reads at most limit bytes; a longer body is ErrTooLarge. A
// declared Content-Length over the limit is refused before reading.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	tooLarge := wire.Field("body", fmt.Errorf("larger than the limit of %d bytes: %w", limit, wire.ErrTooLarge))
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case err != nil:
		return nil, fmt.Errorf("reading the body: %w", wire.Invalid("body", err.Error()))
	}
	return data, nil
}

// writeError maps err through the error table and writes it; it returns
// the status for metrics.
func (s *Server) writeError(w http.ResponseWriter, op string, err error) int {
	ae := s.mapError(transportHTTP, op, err)
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+ServiceName+`"`)
	}
	writeJSON(w, ae.status, ae.body)
	return ae.status
}

// writeJSON writes v with status; v is one of our own types, so encoding
// cannot fail.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := wire.EncodeJSON(v)
	w.Header().Set("Content-Type", wire.ContentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
