package embedded

import (
	"net/url"
	"testing"
	"time"
)

func TestServerOptions(t *testing.T) {
	s := NewServer(t.TempDir())
	if !s.SyncAlways || s.MaxPayload != 8<<20 {
		t.Fatalf("defaults: sync always %v, max payload %d", s.SyncAlways, s.MaxPayload)
	}
	s.ClusterName, s.ClusterListen = "c", "127.0.0.1:6222"
	s.ClusterUser, s.ClusterPassword = "route", "pw"
	s.Routes = []*url.URL{{Scheme: "nats", Host: "127.0.0.1:6222"}, {Scheme: "nats", Host: "127.0.0.1:6223"}}
	opts, err := s.options()
	if err != nil {
		t.Fatal(err)
	}
	if !opts.SyncAlways || opts.Cluster.Port != 6222 || len(opts.Routes) != 2 || opts.Routes[1].User.String() != "route:pw" {
		t.Fatalf("options: sync %v, cluster port %d, routes %v", opts.SyncAlways, opts.Cluster.Port, opts.Routes)
	}
	if s.Routes[1].User != nil {
		t.Fatal("options changed the caller's route URLs")
	}
	s.SyncAlways, s.SyncInterval = false, time.Second
	if opts, _ = s.options(); opts.SyncAlways || opts.SyncInterval != time.Second {
		t.Fatalf("relaxed sync: always %v, interval %v", opts.SyncAlways, opts.SyncInterval)
	}
	s.ClusterListen = "no-port"
	if _, err := s.options(); err == nil {
		t.Fatal("a cluster listen address without a port was accepted")
	}
}
