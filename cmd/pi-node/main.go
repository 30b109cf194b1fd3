package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/pifleet/sessionlog/internal/buildinfo"
)

func main() {
	// Before the flags: it needs none of them (and no PI_NODE_ variable
	// can turn it on).
	if slices.Contains(os.Args[1:], "--version") || slices.Contains(os.Args[1:], "-version") {
		fmt.Println("pi-node", buildinfo.Get())
		return
	}
	m := NewMain(os.Stdout, os.Stderr)
	if err := m.Config.ParseFlags(os.Args[1:], os.Getenv, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "pi-node:", err)
		os.Exit(2)
	}
	// sigs tells which signal ended the wait (SIGTERM: a lame duck first),
	// and a second one cuts the lame duck short.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		m.Logger.Error("start failed", "err", err)
		m.Close()
		os.Exit(1)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // --http-tokens, --http-tls-cert
	go m.reloadOn(ctx, hup)
	select {
	case sig := <-sigs:
		m.Logger.Info("shutting down", "signal", sig.String())
		if sig == syscall.SIGTERM {
			lctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-sigs
				cancel()
			}()
			if err := m.LameDuck(lctx, m.Config.LameDuck); err != nil {
				m.Logger.Warn("lame duck: stopping the NATS service", "err", err)
			}
			cancel()
		}
	case msg := <-m.Fatal():
		m.Logger.Error("shutting down: the embedded NATS server hit a fatal error", "err", msg)
		_ = m.Close()
		os.Exit(1)
	}
	if err := m.Close(); err != nil {
		m.Logger.Error("shutdown", "err", err)
		os.Exit(1)
	}
}

// newLogger builds the slog logger the flags ask for.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	lvl, err := parseLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", s)
	}
	return l, nil
}
