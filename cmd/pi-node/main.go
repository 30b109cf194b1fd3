package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/pifleet/sessionlog/internal/buildinfo"
	"github.com/pifleet/sessionlog/internal/node"
)

func main() {
	// Before the flags: it needs none of them (and no PI_NODE_ variable
	// can turn it on).
	if slices.Contains(os.Args[1:], "--version") || slices.Contains(os.Args[1:], "-version") {
		fmt.Println("pi-node", buildinfo.Get())
		return
	}
	cfg := node.DefaultConfig()
	if err := cfg.ParseFlags(os.Args[1:], os.Getenv, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "pi-node:", err)
		os.Exit(2)
	}
	cfg.LogOutput = os.Stderr
	// The node's own logger is made by Open; this one, alike, logs what
	// happens around it (ParseFlags checked the level and format).
	logger, err := node.NewLogger(os.Stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pi-node:", err)
		os.Exit(2)
	}
	// sigs tells which signal ended the wait (SIGTERM: a lame duck first),
	// and a second one cuts the lame duck short.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	n, err := node.Open(ctx, cfg)
	if err != nil {
		logger.Error("start failed", "err", err)
		os.Exit(1)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // --http-tokens, --http-tls-cert
	go n.ReloadOn(ctx, hup)
	select {
	case sig := <-sigs:
		logger.Info("shutting down", "signal", sig.String())
		if sig == syscall.SIGTERM {
			lctx, cancel := context.WithCancel(context.Background())
			go func() {
				<-sigs
				cancel()
			}()
			if err := n.LameDuck(lctx, cfg.LameDuck); err != nil {
				logger.Warn("lame duck: stopping the NATS service", "err", err)
			}
			cancel()
		}
	case msg := <-n.Fatal():
		logger.Error("shutting down: the embedded NATS server hit a fatal error", "err", msg)
		_ = n.Close(context.Background())
		os.Exit(1)
	}
	if err := n.Close(context.Background()); err != nil {
		logger.Error("shutdown", "err", err)
		os.Exit(1)
	}
}
