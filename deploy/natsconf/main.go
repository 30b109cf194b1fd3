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
