package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/natsauth"
	"github.com/pifleet/sessionlog/internal/secrets"
)

const genSecretsHelp = `Usage: pi-ctl gen-secrets --out DIR --names N1,N2,... [--force] [--valid-for 8760h]

Writes every secret a secured pi-node deployment needs into DIR (created
0700, each file 0600), offline:

  ca.pem, ca/ca-key.pem     a certificate authority; its key sits in a
                            subdirectory, which kubectl create secret
                            --from-file=DIR skips: no node needs it
  node.pem, node-key.pem    one certificate for every node, for server and
                            client use (HTTPS, NATS, mutual TLS on routes and
                            gateways); its names are --names plus localhost
                            and 127.0.0.1 (wildcards such as
                            *.pi-node.ns.svc.cluster.local work)
  nats-auth.json            pi-node's --nats-auth: users admin (admin),
                            worker (client), reader (reader), jsworker
                            (jetstream), sys (system: NATS tooling) as
                            bcrypt hashes of cost 4 (the passwords are
                            random, 130 bits), and the routes' and
                            gateways' passwords
  nats-USER.password        each of those users' password
  http-tokens               pi-node's --http-tokens: admin (admin), worker
                            (read, write), reader (read)
  http-NAME.token           each of those tokens
  encryption.key            pi-node's --encryption-key-file: 64 hex digits
                            (256 bits) that encrypt every node's data dir
                            (docs/SECURITY.md, encryption at rest); keep a
                            copy apart from the data: without it, nothing
                            a node wrote can be read

It refuses, writing nothing, if any of these files exists, unless --force.
It prints the files and pi-node's flags, never a secret. Rotate a NATS
password later with pi-ctl nats-user new, a token with pi-ctl token new.
`

// genNATSUsers and genTokens are the users and tokens gen-secrets makes:
// one per role a deployment usually has.
var (
	genNATSUsers = []natsauth.User{
		{User: "admin", Role: natsauth.RoleAdmin},
		{User: "worker", Role: natsauth.RoleClient},
		{User: "reader", Role: natsauth.RoleReader},
		{User: "jsworker", Role: natsauth.RoleJetStream},
		{User: "sys", Role: natsauth.RoleSystem},
	}
	genTokens = []tokenLine{
		{Name: "admin", Scopes: []string{"admin"}},
		{Name: "worker", Scopes: []string{"read", "write"}},
		{Name: "reader", Scopes: []string{"read"}},
	}
)

// caKeyFile is where the CA's key goes: apart from what the nodes mount
// (a Secret made from DIR's files holds no subdirectory), since with it
// anyone could issue a certificate the cluster trusts.
var caKeyFile = filepath.Join("ca", "ca-key.pem")

// genSecretsFiles are the names gen-secrets writes, in the order it lists
// them.
func genSecretsFiles() []string {
	names := []string{"ca.pem", caKeyFile, "node.pem", "node-key.pem", "nats-auth.json"}
	for _, u := range genNATSUsers {
		names = append(names, "nats-"+u.User+".password")
	}
	names = append(names, "http-tokens")
	for _, tk := range genTokens {
		names = append(names, "http-"+tk.Name+".token")
	}
	return append(names, "encryption.key")
}

func runGenSecrets(_ context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl gen-secrets")
	out := fs.String("out", "", "write the files into `DIR` (created 0700)")
	namesFlag := fs.String("names", "", "comma-separated DNS `NAMES` and IPs of the nodes, for the certificate")
	force := fs.Bool("force", false, "overwrite files that exist")
	validFor := fs.Duration("valid-for", 8760*time.Hour, "how long the CA and the certificate are valid")
	if _, err := parseArgs(e, fs, genSecretsHelp, args); err != nil {
		return err
	}
	var names []string
	for _, n := range append(strings.Split(*namesFlag, ","), "localhost", "127.0.0.1") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	switch {
	case *out == "":
		return usagef(fs.Name(), "--out is required")
	case strings.TrimSpace(*namesFlag) == "":
		return usagef(fs.Name(), "--names is required (the nodes' DNS names or IPs)")
	case *validFor <= 0:
		return usagef(fs.Name(), "--valid-for %v must be positive", *validFor)
	}
	files := genSecretsFiles()
	if !*force {
		if err := refuseExisting(*out, files); err != nil {
			return err
		}
	}
	set, err := makeSecrets(names, *validFor)
	if err != nil {
		return err
	}
	if err := secrets.WriteAll(*out, set, *force); err != nil {
		var ee *secrets.ExistsError
		if errors.As(err, &ee) {
			return refuseExisting(*out, files)
		}
		return err
	}
	return printGenSummary(e, *out, files)
}

// refuseExisting is the refusal of a second run: it names the file.
func refuseExisting(dir string, files []string) error {
	var ee *secrets.ExistsError
	if err := secrets.CheckAbsent(dir, files...); errors.As(err, &ee) {
		return fmt.Errorf("gen-secrets: %s exists; nothing written (--force overwrites every file)", ee.Path)
	} else if err != nil {
		return err
	}
	return nil
}

// makeSecrets generates every file of genSecretsFiles, in that order.
func makeSecrets(names []string, validFor time.Duration) ([]secrets.File, error) {
	ca, err := secrets.NewCA("pi-node CA", validFor)
	if err != nil {
		return nil, err
	}
	cert, key, err := ca.Issue(names, validFor)
	if err != nil {
		return nil, err
	}
	set := []secrets.File{
		{Name: "ca.pem", Data: ca.CertPEM()}, {Name: caKeyFile, Data: ca.KeyPEM()},
		{Name: "node.pem", Data: cert}, {Name: "node-key.pem", Data: key},
	}
	auth := &natsauth.File{
		Routes:   &natsauth.Peer{User: "route", Password: secrets.Password()},
		Gateways: &natsauth.Peer{User: "gateway", Password: secrets.Password()},
	}
	var passwords []secrets.File
	for _, u := range genNATSUsers {
		password := secrets.Password()
		if u.Password, err = natsauth.HashPassword(password); err != nil {
			return nil, err
		}
		auth.Users = append(auth.Users, u)
		passwords = append(passwords, secrets.File{Name: "nats-" + u.User + ".password", Data: []byte(password)})
	}
	if err := auth.Check(); err != nil {
		return nil, err // a bug here, not the operator's
	}
	set = append(append(set, secrets.File{Name: "nats-auth.json", Data: auth.Marshal()}), passwords...)
	var lines []byte
	var tokens []secrets.File
	for _, tk := range genTokens {
		secret, line := newToken(tk.Name, tk.Scopes, "")
		lines = append(append(lines, line...), '\n')
		tokens = append(tokens, secrets.File{Name: "http-" + tk.Name + ".token", Data: []byte(secret)})
	}
	set = append(append(set, secrets.File{Name: "http-tokens", Data: lines}), tokens...)
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	return append(set, secrets.File{Name: "encryption.key", Data: []byte(hex.EncodeToString(dataKey) + "\n")}), nil
}

func printGenSummary(e *env, dir string, files []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "wrote (mode 0600) in %s:\n", dir)
	for _, f := range files {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	fmt.Fprintf(&b, "\npi-node flags:\n  --nats-auth %s --http-tokens %s \\\n", p("nats-auth.json"), p("http-tokens"))
	fmt.Fprintf(&b, "  --http-tls-cert %s --http-tls-key %s \\\n", p("node.pem"), p("node-key.pem"))
	fmt.Fprintf(&b, "  --nats-tls-cert %s --nats-tls-key %s \\\n", p("node.pem"), p("node-key.pem"))
	fmt.Fprintf(&b, "  --cluster-tls-cert %s --cluster-tls-key %s --cluster-tls-ca %s\n", p("node.pem"), p("node-key.pem"), p("ca.pem"))
	fmt.Fprintf(&b, "and, to encrypt the data dir (on a new one; docs/OPERATIONS.md):\n  --encryption-key-file %s\n", p("encryption.key"))
	fmt.Fprintf(&b, "\nKubernetes:\n  kubectl create secret generic pi-node-secrets --from-file=%s\n", dir)
	_, err := fmt.Fprint(e.stdout, b.String())
	return err
}
