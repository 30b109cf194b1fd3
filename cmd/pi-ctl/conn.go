package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/wire"
)

// defaultServer is where pi-node's embedded NATS server listens by default.
const defaultServer = "nats://127.0.0.1:4222"

// natsServer is the NATS URL to dial: --server, else $PI_CTL_SERVER, else
// pi-node's default.
func natsServer(e *env, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if s := e.getenv("PI_CTL_SERVER"); s != "" {
		return s
	}
	return defaultServer
}

// connFlags are the connection options of every server command.
type connFlags struct {
	server, creds, user, password string
	passwordFile                  string
	tlsCert, tlsKey, tlsCA        string
	http, token                   string
	timeout                       time.Duration
	minSeq                        uint64
	consistency                   string
	// reconnect keeps a NATS connection for as long as the command runs
	// (pi-ctl sync), however long the server is away.
	reconnect bool
}

// addConnFlags registers the connection options on fs. The environment
// ($PI_CTL_SERVER, $PI_CTL_HTTP, $PI_CTL_TOKEN, $PI_CTL_PASSWORD,
// $PI_CTL_TLS_CA) is read
// by open, after parsing, so that a flag given on the command line wins
// over it.
func addConnFlags(fs *flag.FlagSet) *connFlags {
	c := &connFlags{}
	fs.StringVar(&c.server, "server", "", "NATS `URL` of the pi-nodes' NATS server (default $PI_CTL_SERVER, else "+defaultServer+")")
	fs.StringVar(&c.creds, "creds", "", "NATS credentials `FILE` (JWT and nkey)")
	fs.StringVar(&c.user, "user", "", "NATS user")
	fs.StringVar(&c.password, "password", "", "NATS password for --user (seen by every user of the host in ps: prefer --password-file or $PI_CTL_PASSWORD)")
	fs.StringVar(&c.passwordFile, "password-file", "", "read the NATS password for --user from `FILE` (e.g. gen-secrets' nats-worker.password); default $PI_CTL_PASSWORD")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "client certificate `FILE` (NATS, or https with --http)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "client key `FILE` for --tls-cert")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "CA `FILE` that signed the server's certificate (default $PI_CTL_TLS_CA), e.g. gen-secrets' ca.pem")
	fs.StringVar(&c.http, "http", "", "talk HTTP to pi-node at `URL` instead of NATS (default $PI_CTL_HTTP)")
	fs.StringVar(&c.token, "token", "", "bearer `TOKEN` for --http (default $PI_CTL_TOKEN)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "give up on a request (and on connecting) after `D`")
	fs.Uint64Var(&c.minSeq, "min-seq", 0, "read your writes: wait until the node has applied log sequence `N` (a write's lastSeq)")
	fs.StringVar(&c.consistency, "consistency", "", "`strong`: reads reflect every write acknowledged before them, on any node (the node asks the stream leader first)")
	return c
}

// open checks the options and connects: HTTP when --http (or $PI_CTL_HTTP)
// is set and --server is not given on the command line, else NATS.
// Problems with the options are usage errors (exit 2).
func (c *connFlags) open(ctx context.Context, e *env, fs *flag.FlagSet) (backend, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["server"] && set["http"]:
		return nil, usagef(fs.Name(), "--server and --http choose the transport: give one of them")
	case c.timeout <= 0:
		return nil, usagef(fs.Name(), "--timeout must be positive, not %v", c.timeout)
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return nil, usagef(fs.Name(), "--tls-cert and --tls-key go together")
	case c.password != "" && c.passwordFile != "":
		return nil, usagef(fs.Name(), "--password and --password-file: give one")
	case (c.password != "" || c.passwordFile != "") && c.user == "":
		return nil, usagef(fs.Name(), "--password needs --user")
	case c.consistency != "" && c.consistency != wire.ConsistencyStrong:
		return nil, usagef(fs.Name(), "--consistency takes %q (or nothing), not %q", wire.ConsistencyStrong, c.consistency)
	}
	if !set["tls-ca"] {
		c.tlsCA = e.getenv("PI_CTL_TLS_CA") // a private CA: set once for the shell, as the URL and token
	}
	httpURL := c.http
	if httpURL == "" && !set["server"] {
		httpURL = e.getenv("PI_CTL_HTTP")
	}
	if httpURL != "" {
		if c.creds != "" || c.user != "" {
			return nil, usagef(fs.Name(), "--creds, --user and --password are for NATS, not --http (use --token)")
		}
		token := c.token
		if !set["token"] {
			token = e.getenv("PI_CTL_TOKEN")
		}
		h, err := apiclient.NewHTTP(apiclient.HTTPOptions{URL: httpURL, Token: token, TLSCert: c.tlsCert, TLSKey: c.tlsKey, TLSCA: c.tlsCA,
			Timeout: c.timeout, MinSeq: c.minSeq, Consistency: c.consistency})
		if err != nil {
			return nil, usagef(fs.Name(), "--http %v", err)
		}
		return &apiBackend{c: h, hasToken: token != ""}, nil
	}
	if set["token"] {
		return nil, usagef(fs.Name(), "--token is the HTTP bearer token: use it with --http (a NATS token goes in the URL, nats://TOKEN@host:4222)")
	}
	password, err := natsPassword(e, c.user, c.password, c.passwordFile)
	if err != nil {
		return nil, err
	}
	server := natsServer(e, c.server)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// One connection attempt, no retries in the background: an operator
	// wants to hear at once that the server is not there.
	n, err := apiclient.DialNATS(apiclient.NATSOptions{URL: server, Name: "pi-ctl", Creds: c.creds, User: c.user, Password: password,
		TLSCert: c.tlsCert, TLSKey: c.tlsKey, TLSCA: c.tlsCA, Timeout: c.timeout, MinSeq: c.minSeq, Consistency: c.consistency,
		Reconnect: c.reconnect})
	var ue *apiclient.UnreachableError
	var ce *apiclient.CertificateError
	switch {
	case errors.As(err, &ue):
		ue.Hint = "is pi-node running? point --server or $PI_CTL_SERVER at its NATS server, or use --http URL"
	case errors.As(err, &ce):
		ce.Hint = caHint
	}
	if err != nil {
		return nil, err
	}
	return &apiBackend{c: n, nats: true}, nil
}

// natsPassword is the password for user: --password, else the first line
// of --password-file, else $PI_CTL_PASSWORD (only with a user: a variable
// set for the NATS commands must not break the --http ones). The file and
// the variable keep it out of the command line, which every user of the
// host can read (ps).
func natsPassword(e *env, user, password, file string) (string, error) {
	switch {
	case password != "" || user == "":
		return password, nil
	case file == "":
		return e.getenv("PI_CTL_PASSWORD"), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--password-file: %w", err)
	}
	if password = strings.TrimRight(string(b), "\r\n"); password == "" {
		return "", fmt.Errorf("--password-file %s is empty", file)
	}
	return password, nil
}

// query is a command's one request: it connects, runs req and disconnects.
// With asJSON it prints the reply as the node sent it and reports printed;
// else it decodes the reply into v (nil: ignore it).
func (c *connFlags) query(ctx context.Context, e *env, fs *flag.FlagSet, req wire.Request, asJSON bool, v any) (printed bool, err error) {
	b, err := c.open(ctx, e, fs)
	if err != nil {
		return false, err
	}
	defer b.close()
	if !asJSON {
		return false, call(ctx, b, req, v)
	}
	body, err := b.do(ctx, req)
	if err != nil {
		return false, err
	}
	return true, writeJSON(e.stdout, body)
}
