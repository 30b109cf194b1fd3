package embedded

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// A region of a cross-region deployment is one NATS cluster; gateways join
// the regions' clusters into a supercluster. A supercluster has ONE
// JetStream meta group over every server of every region, so stream names
// and subjects are shared by all regions (docs/CROSS-REGION.md explains
// what that means for failover), and a third, small region — the
// tie-breaker — keeps the meta group's quorum when one of two main regions
// is lost.

// gatewayOptions adds the gateway listener and the remote regions to opts.
// Without a GatewayName it does nothing.
func (s *Server) gatewayOptions(opts *server.Options) error {
	if s.GatewayName == "" {
		if s.GatewayListen != "" || len(s.Gateways) > 0 {
			return errors.New("server: gateways need a gateway name (the region)")
		}
		return nil
	}
	if s.GatewayName != s.ClusterName {
		// nats-server requires it too; saying so here names the fix.
		return fmt.Errorf("server: gateway name %q must equal the cluster name %q (both are the region)", s.GatewayName, s.ClusterName)
	}
	host, portStr, err := net.SplitHostPort(s.GatewayListen)
	if err != nil {
		return fmt.Errorf("server: gateway listen %q: %w", s.GatewayListen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("server: gateway listen %q: bad port: %w", s.GatewayListen, err)
	}
	if port == 0 {
		port = -1 // the server's "pick a free port"; 0 means "no gateway" to it
	}
	opts.Gateway = server.GatewayOpts{Name: s.GatewayName, Host: host, Port: port}
	names := make([]string, 0, len(s.Gateways))
	for name := range s.Gateways {
		names = append(names, name)
	}
	slices.Sort(names) // a stable order, for logs and tests
	for _, name := range names {
		if name == s.GatewayName {
			continue
		}
		urls := make([]*url.URL, len(s.Gateways[name]))
		for i, u := range s.Gateways[name] {
			c := *u
			urls[i] = &c
		}
		opts.Gateway.Gateways = append(opts.Gateway.Gateways, &server.RemoteGatewayOpts{Name: name, URLs: urls})
	}
	if len(opts.Gateway.Gateways) == 0 {
		return fmt.Errorf("server: region %s lists no other region's gateways", s.GatewayName)
	}
	return nil
}

// ParseGateways reads the gateways of a supercluster as pi-node's
// --gateways flag has them: "NAME=URL,URL;NAME2=URL", each URL
// nats://host:port (the scheme may be left out). Several specs (a repeated
// flag) merge; a region named twice collects the URLs of both.
func ParseGateways(specs ...string) (map[string][]*url.URL, error) {
	out := map[string][]*url.URL{}
	for _, spec := range specs {
		for _, part := range strings.Split(spec, ";") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			name, list, ok := strings.Cut(part, "=")
			name = strings.TrimSpace(name)
			if !ok || name == "" || strings.ContainsAny(name, " .*>") {
				return nil, fmt.Errorf("%q is not NAME=nats://host:port[,…]", part)
			}
			for _, raw := range strings.Split(list, ",") {
				if raw = strings.TrimSpace(raw); raw == "" {
					continue
				}
				if !strings.Contains(raw, "://") {
					raw = "nats://" + raw
				}
				u, err := url.Parse(raw)
				if err != nil || u.Hostname() == "" || u.Port() == "" {
					return nil, fmt.Errorf("gateway %s: %q is not nats://host:port", name, raw)
				}
				if u.Scheme != "nats" && u.Scheme != "tls" {
					return nil, fmt.Errorf("gateway %s: %q: scheme must be nats", name, raw)
				}
				out[name] = append(out[name], u)
			}
			if len(out[name]) == 0 {
				return nil, fmt.Errorf("gateway %s: no URL", name)
			}
		}
	}
	return out, nil
}

// FormatGateways is the inverse of ParseGateways, with regions in name order.
func FormatGateways(gws map[string][]*url.URL) string {
	names := make([]string, 0, len(gws))
	for name := range gws {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		urls := make([]string, len(gws[name]))
		for j, u := range gws[name] {
			urls[j] = u.String()
		}
		parts[i] = name + "=" + strings.Join(urls, ",")
	}
	return strings.Join(parts, ";")
}
