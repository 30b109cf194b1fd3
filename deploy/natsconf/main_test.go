package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/pifleet/sessionlog/internal/natsauth"
)

// TestIncludedByNATSServer: nats-server reads the output as variables of a
// configuration that uses them for routes and gateways.
func TestIncludedByNATSServer(t *testing.T) {
	dir := t.TempDir()
	auth := &natsauth.File{
		Users:    []natsauth.User{{User: "admin", Password: "$2a$11$" + strings.Repeat("a", 53), Role: natsauth.RoleAdmin}},
		Routes:   &natsauth.Peer{User: "route", Password: "r-secret\"x"},
		Gateways: &natsauth.Peer{User: "gateway", Password: "g-secret"},
	}
	authFile := filepath.Join(dir, "nats-auth.json")
	if err := os.WriteFile(authFile, auth.Marshal(), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(authFile, &out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nats-peers.conf"), out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "t.conf")
	if err := os.WriteFile(conf, []byte(`include "nats-peers.conf"
listen: 127.0.0.1:4222
cluster { name: T, listen: 127.0.0.1:6222, authorization: $PI_ROUTES }
gateway { name: T, listen: 127.0.0.1:7222, authorization: $PI_GATEWAYS }
`), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Cluster.Username != "route" || opts.Cluster.Password != "r-secret\"x" ||
		opts.Gateway.Username != "gateway" || opts.Gateway.Password != "g-secret" {
		t.Errorf("cluster %q/%q gateway %q/%q", opts.Cluster.Username, opts.Cluster.Password, opts.Gateway.Username, opts.Gateway.Password)
	}
	// A file without peers is refused.
	auth.Gateways = nil
	if err := os.WriteFile(authFile, auth.Marshal(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(authFile, &out); err == nil {
		t.Error("no error without gateways")
	}
}
