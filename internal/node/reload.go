package node

import (
	"context"
	"errors"
	"os"

	"github.com/pifleet/sessionlog/internal/api"
)

// loadTokens reads --http-tokens; nil when it is not set.
func (m *Node) loadTokens() (*api.Tokens, error) {
	if m.Config.HTTPTokens == "" {
		return nil, nil
	}
	return api.LoadTokens(m.Config.HTTPTokens)
}

// Reload reads the tokens file, the NATS users file and every certificate
// again (SIGHUP).
// What does not load keeps its previous version, and the error is logged
// and returned; what loads is in force for the next request.
func (m *Node) Reload() error {
	var errs []error
	if m.Config.HTTPTokens != "" && m.api != nil {
		t, err := m.loadTokens()
		if err != nil {
			errs = append(errs, err)
			m.Logger.Error("reload: keeping the previous tokens", "err", err)
		} else {
			m.api.SetTokens(t)
			m.Logger.Info("reload: tokens", "file", m.Config.HTTPTokens, "tokens", t.Len())
		}
	}
	errs = append(errs, m.reloadNATS()...)
	if m.certs != nil {
		if err := m.certs.reload(); err != nil {
			errs = append(errs, err)
			m.Logger.Error("reload: keeping the previous HTTP certificate", "err", err)
		} else {
			m.Logger.Info("reload: HTTP certificate", "cert", m.Config.HTTPTLSCert)
		}
	}
	return errors.Join(errs...)
}

// ReloadOn calls Reload for every signal on sig (SIGHUP) until ctx ends.
func (m *Node) ReloadOn(ctx context.Context, sig <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			_ = m.Reload() // logged
		}
	}
}
