// Command natsconf writes the route and gateway credentials of a pi-node
// --nats-auth file (pi-ctl gen-secrets' nats-auth.json) as nats-server
// configuration variables, for a plain nats-server that joins pi-nodes: the
// tie-breaker of a cross-region deployment (deploy/compose/tiebreaker.conf
// includes the output and sets `authorization: $PI_ROUTES` and
// `authorization: $PI_GATEWAYS`; nats-server presents the same user and
// password when it dials).
//
//	natsconf secrets/nats-auth.json > secrets/nats-peers.conf
//
// nats-server cannot include nats-auth.json itself: its users carry roles,
// which nats-server does not know. The output holds the peers' passwords:
// write it next to nats-auth.json, as private as that.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/pifleet/sessionlog/internal/natsauth"
)

func main() {
	if len(os.Args) != 2 || os.Args[1] == "-h" || os.Args[1] == "--help" {
		fmt.Fprintln(os.Stderr, "Usage: natsconf NATS-AUTH-FILE > nats-peers.conf")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "natsconf:", err)
		os.Exit(1)
	}
}

func run(path string, w io.Writer) error {
	f, err := natsauth.Load(path)
	if err != nil {
		return err
	}
	if f.Routes == nil || f.Gateways == nil {
		return fmt.Errorf("%s: needs \"routes\" and \"gateways\" credentials", path)
	}
	fmt.Fprintf(w, "# The route and gateway credentials of %s (natsconf). Keep it private.\n", path)
	for _, v := range []struct {
		name string
		p    *natsauth.Peer
	}{{"PI_ROUTES", f.Routes}, {"PI_GATEWAYS", f.Gateways}} {
		user, _ := json.Marshal(v.p.User)
		pass, _ := json.Marshal(v.p.Password)
		if _, err := fmt.Fprintf(w, "%s: {user: %s, password: %s}\n", v.name, user, pass); err != nil {
			return err
		}
	}
	return nil
}
