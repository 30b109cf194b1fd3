package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nats-io/nats.go"

	"github.com/pifleet/sessionlog/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "agent:", err)
		}
		os.Exit(1)
	}
}

// run is the whole program; tests call it with the address of an
// in-process pi-node.
func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(errOut)
	// The same variables as pi-ctl's: one shell's setup serves both.
	httpURL := fs.String("http", envOr("PI_CTL_HTTP", "http://127.0.0.1:8080"), "pi-node's HTTP API `URL` (default $PI_CTL_HTTP, else http://127.0.0.1:8080)")
	natsURL := fs.String("nats", "", "write on JetStream directly through the NATS server at `URL` (instead of --http)")
	token := fs.String("token", os.Getenv("PI_CTL_TOKEN"), "bearer `TOKEN` of pi-node's HTTP API (default $PI_CTL_TOKEN)")
	tlsCA := fs.String("tls-ca", os.Getenv("PI_CTL_TLS_CA"), "CA `FILE` that signed pi-node's certificate, for https (default $PI_CTL_TLS_CA)")
	clientID := fs.String("client", "agent-1", "the worker's cursor client `ID`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := []client.Option{client.WithToken(*token)}
	var natsOpts []nats.Option
	if *tlsCA != "" {
		pem, err := os.ReadFile(*tlsCA)
		if err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca %s: no PEM certificate in it", *tlsCA)
		}
		opts = append(opts, client.WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
		natsOpts = append(natsOpts, nats.RootCAs(*tlsCA))
	}
	tr, via := client.HTTP(*httpURL), *httpURL
	if *natsURL != "" {
		tr, via = client.JetStreamURL(*natsURL, natsOpts...), *natsURL+" (JetStream)"
	}
	c, err := client.New(ctx, tr, opts...)
	if err != nil {
		return err
	}
	defer c.Close()

	s, err := c.Create(client.WithCwd("/home/dev/project"), client.WithClientID(*clientID))
	if err != nil {
		return err
	}
	a := &agent{s: s, out: out}
	a.printf("session %s via %s, client %s\n", s.ID(), via, *clientID)

	// 1. The model.
	a.note(s.AppendModelChange(ctx, provider, model))
	// 2-5. The question, a read, its result, the root cause.
	question, err := a.ask(ctx, "Why does the salt check in auth.ts fail?")
	if err != nil {
		return err
	}
	rootCause := s.LeafID()
	// 6. Back to the question: the next turn branches off it.
	if err := s.Branch(ctx, question); err != nil {
		return err
	}
	a.printf("branch  back to %s\n", question)
	// 7. A second question, a grep, its result.
	if _, err := a.ask(ctx, "Show me the hash function first."); err != nil {
		return err
	}
	// 8. A label on the root cause, and a name.
	a.note(s.Label(ctx, rootCause, "root_cause_found"))
	a.note(s.Rename(ctx, "auth salt debugging"))
	if a.err != nil {
		return a.err
	}

	a.printf("\ntree (leaf %s):\n", s.LeafID())
	if err := printTree(out, s); err != nil {
		return err
	}
	ctxt := s.BuildContext()
	a.printf("\ncontext at the leaf: %d messages, model %s/%s, thinking %s\n",
		len(ctxt.Messages), ctxt.Model.Provider, ctxt.Model.ModelID, ctxt.ThinkingLevel)

	// Another worker with the same client id resumes where this one stands.
	again, err := c.Open(ctx, s.ID(), client.WithClientID(*clientID))
	if err != nil {
		return err
	}
	name, _ := again.Name()
	a.printf("reopened %q: %d entries, leaf %s, as stored: %v\n", name, len(again.Entries()), again.LeafID(),
		string(again.Export()) == string(s.Export()))
	return a.err
}

// envOr returns the environment variable key, or def when it is empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
