package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/secrets"
)

// natsUserCommands make the users of pi-node's --nats-auth file: no
// server is involved.
var natsUserCommands = []command{
	{"new", "make a random password and its user for --nats-auth (or rotate one)", runNATSUserNew},
}

const natsUserIntro = `pi-ctl nats-user makes the users of pi-node's --nats-auth file (the
embedded NATS server's users, stored as bcrypt hashes of cost 4: the
passwords are random, 130 bits). No server is involved.`

func runNATSUser(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "pi-ctl nats-user", natsUserIntro, natsUserCommands, args)
}

const natsUserNewHelp = `Usage: pi-ctl nats-user new NAME --role ROLE [--append FILE]

Makes a random password (letters and digits, so it fits a nats:// URL) for
the NATS user NAME with ROLE: client, reader, jetstream or admin
(docs/SECURITY.md). Prints the password on the first line (give it to the
client; it is not stored anywhere) and the user's JSON object for the
"users" list of the --nats-auth file on the second. With --append FILE (an
existing --nats-auth file) the user is added to FILE, or replaces the user
of the same name (a rotation), FILE is checked and replaced atomically
(mode 0600), and only the password is printed. Then send pi-node SIGHUP.
`

func runNATSUserNew(_ context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl nats-user new")
	role := fs.String("role", "", "the user's `ROLE`: "+strings.Join(natsauth.Roles, ", "))
	appendTo := fs.String("append", "", "add or replace the user in the --nats-auth `FILE` and print only the password")
	pos, err := parseArgs(e, fs, natsUserNewHelp, args, "NAME")
	if err != nil {
		return err
	}
	if !slices.Contains(natsauth.Roles, *role) {
		return usagef(fs.Name(), "--role %q: give one of %s", *role, strings.Join(natsauth.Roles, ", "))
	}
	password := secrets.Password()
	hash, err := natsauth.HashPassword(password)
	if err != nil {
		return err
	}
	u := natsauth.User{User: pos[0], Password: hash, Role: *role}
	if err := (&natsauth.File{Users: []natsauth.User{u}}).Check(); err != nil {
		return usagef(fs.Name(), "NAME %q: %v", pos[0], err)
	}
	if *appendTo == "" {
		line, _ := json.Marshal(u) // strings only: it cannot fail
		_, err = fmt.Fprintf(e.stdout, "%s\n%s\n", password, line)
		return err
	}
	if err := upsertNATSUser(*appendTo, u); err != nil {
		return err
	}
	_, err = fmt.Fprintln(e.stdout, password)
	return err
}

// upsertNATSUser puts u into the --nats-auth file at path, in place of the
// user of its name if there is one. A file that does not parse, before or
// after, is left as it was: pi-node would refuse it on SIGHUP.
func upsertNATSUser(path string, u natsauth.User) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := natsauth.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w; not changed", path, err)
	}
	if i := slices.IndexFunc(f.Users, func(v natsauth.User) bool { return v.Name() == u.User }); i >= 0 {
		f.Users[i] = u
	} else {
		f.Users = append(f.Users, u)
	}
	out := f.Marshal()
	if _, err := natsauth.Parse(out); err != nil {
		return fmt.Errorf("%s: %w; not changed", path, err)
	}
	return secrets.WriteFileAtomic(path, out)
}
