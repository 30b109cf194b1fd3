package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/pifleet/sessionlog/internal/api"
)

// certReloader serves the HTTP API's certificate and swaps it on reload;
// handshakes in progress keep the one they got.
type certReloader struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	return r, r.reload()
}

// reload reads the pair again; on an error the previous one stays.
func (r *certReloader) reload() error {
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("--http-tls-cert %s, --http-tls-key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert.Store(&c)
	return nil
}

func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cert.Load(), nil
}

// tlsConfig is the HTTP API's TLS configuration over r.
func (r *certReloader) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.getCertificate}
}

// loadTokens reads --http-tokens; nil when it is not set.
func (m *Main) loadTokens() (*api.Tokens, error) {
	if m.Config.HTTPTokens == "" {
		return nil, nil
	}
	return api.LoadTokens(m.Config.HTTPTokens)
}

// Reload reads the tokens file and the HTTP certificate again (SIGHUP).
// What does not load keeps its previous version, and the error is logged
// and returned; what loads is in force for the next request.
func (m *Main) Reload() error {
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

// reloadOn calls Reload for every signal on sig (SIGHUP) until ctx ends.
func (m *Main) reloadOn(ctx context.Context, sig <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			_ = m.Reload() // logged
		}
	}
}
