package api

import (
	"context"
	"net/http"

	"github.com/pifleet/sessionlog/internal/wire"
)

// principalKey carries the request's principal in its context, for the
// operations whose answer depends on it (status).
type principalKey struct{}

func withPrincipal(ctx context.Context, p *principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalOf is the principal of ctx; a context without one is trusted
// (the Server's own calls).
func principalOf(ctx context.Context) *principal {
	if p, ok := ctx.Value(principalKey{}).(*principal); ok {
		return p
	}
	return anyone
}

// Outcomes of pi_api_auth_total.
const (
	authOK           = "ok"
	authUnauthorized = wire.CodeUnauthorized
	authForbidden    = wire.CodeForbidden
	// authNotRequest: a message on an operation's NATS subject that no
	// client sent as a request (notARequest); never run.
	authNotRequest = "not_a_request"
)

// checkHTTP authenticates and authorizes an HTTP request for op; a refusal
// is audited (one log line, within AuditThrottle's burst per remote
// address; pi_api_auth_total) and returned as the error to answer with.
func (s *Server) checkHTTP(r *http.Request, op string) (*principal, error) {
	ts := s.tokens.Load()
	p, err := s.authenticate(ts, r)
	if err == nil {
		err = authorize(p, op)
	}
	if !ts.on {
		return p, err
	}
	switch {
	case err == nil:
		s.metrics.auth.WithLabelValues(authOK).Inc()
	case p == nil:
		s.metrics.auth.WithLabelValues(authUnauthorized).Inc()
		if !s.audit.Refused(AuditSource(r.RemoteAddr)) {
			break
		}
		s.log.Warn("audit: unauthorized", keyWho, "-", keyTransport, transportHTTP, keyOp, op, keyOutcome, authUnauthorized,
			keyRemote, r.RemoteAddr, keyStatus, http.StatusUnauthorized)
	default:
		s.metrics.auth.WithLabelValues(authForbidden).Inc()
		if !s.audit.Refused(AuditSource(r.RemoteAddr)) {
			break
		}
		s.log.Warn("audit: forbidden", keyWho, p.name, keyTransport, transportHTTP, keyOp, op, keyOutcome, authForbidden,
			keyRemote, r.RemoteAddr, keyStatus, http.StatusForbidden, "scope", opScopes[op])
	}
	return p, err
}

// auditAdmin logs an admin operation (scope admin: the archive's), or a
// delete, that was let through, with its outcome, and counts it in
// pi_api_admin_ops_total.
func (s *Server) auditAdmin(p *principal, transport, op string, status int, err error) {
	if opScopes[op] != ScopeAdmin && op != wire.OpDelete.Name {
		return
	}
	outcome := "ok"
	if err != nil {
		_, d, _ := wire.StatusOf(err)
		outcome = d.Code
	}
	s.metrics.adminOps.WithLabelValues(op, outcome).Inc()
	s.log.Info("audit: admin operation", keyWho, p.name, keyTransport, transport, keyOp, op, keyOutcome, outcome, keyStatus, status)
}
