package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pifleet/sessionlog/internal/secrets"
)

// tokenCommands make the lines of pi-node's --http-tokens file (its format
// is docs/API.md's, Auth): no server is involved.
var tokenCommands = []command{
	{"new", "make a random token and its line for --http-tokens", runTokenNew},
	{"hash", "print the sha256 of a token read from stdin, as the file stores it", runTokenHash},
}

const tokenIntro = `pi-ctl token makes scoped bearer tokens for pi-node's --http-tokens file,
which stores only their SHA-256. No server is involved.`

func runToken(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "pi-ctl token", tokenIntro, tokenCommands, args)
}

const tokenNewHelp = `Usage: pi-ctl token new NAME --scopes read,write [--cwd-prefix DIR] [--append FILE]

Makes a random token for NAME (who it is in pi-node's audit log) with the
scopes read, write and/or admin. Prints the token on the first line (give it
to the client, e.g. as PI_CTL_TOKEN; it is not stored anywhere) and the
line for the --http-tokens file on the second. With --append FILE the line
is appended to FILE (created with mode 0600) and only the token is printed.
With --cwd-prefix DIR the token is a tenant's: it only sees and writes the
sessions whose cwd is DIR or under it (not with admin). Then send pi-node
SIGHUP.
`

// tokenScopes are the scopes pi-node knows.
var tokenScopes = []string{"read", "write", "admin"}

// tokenLine is one line of the tokens file.
type tokenLine struct {
	Name      string   `json:"name"`
	SHA256    string   `json:"sha256"`
	Scopes    []string `json:"scopes"`
	CwdPrefix string   `json:"cwdPrefix,omitempty"`
}

func runTokenNew(_ context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl token new")
	scopes := fs.String("scopes", "", "comma-separated `SCOPES`: read, write, admin")
	appendTo := fs.String("append", "", "append the line to `FILE` and print only the token")
	cwdPrefix := fs.String("cwd-prefix", "", "confine the token to the sessions whose cwd is `DIR` or under it")
	pos, err := parseArgs(e, fs, tokenNewHelp, args, "NAME")
	if err != nil {
		return err
	}
	name := pos[0]
	if strings.ContainsAny(name, " \t\r\n\"") {
		return usagef(fs.Name(), "NAME %q: no spaces or quotes", name)
	}
	var list []string
	for _, s := range strings.Split(*scopes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(tokenScopes, s) {
			return usagef(fs.Name(), "unknown scope %q (read, write, admin)", s)
		}
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	switch {
	case len(list) == 0:
		return usagef(fs.Name(), "--scopes is required (read, write, admin)")
	case *cwdPrefix != "" && !strings.HasPrefix(*cwdPrefix, "/"):
		return usagef(fs.Name(), "--cwd-prefix %q must be an absolute path", *cwdPrefix)
	case *cwdPrefix != "" && slices.Contains(list, "admin"):
		return usagef(fs.Name(), "--cwd-prefix and scope admin exclude each other (admin covers every session)")
	}
	secret, line := newToken(name, list, *cwdPrefix)
	if *appendTo != "" {
		f, err := os.OpenFile(*appendTo, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(f, "%s\n", line); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		_, err = fmt.Fprintln(e.stdout, secret)
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n%s\n", secret, line)
	return err
}

const tokenHashHelp = `Usage: pi-ctl token hash < TOKEN

Prints the SHA-256 (hex) of the token on stdin (one trailing newline is
ignored), as the sha256 field of the --http-tokens file; the same as
printf %s TOKEN | sha256sum.
`

func runTokenHash(_ context.Context, e *env, args []string) error {
	fs := newFlags("pi-ctl token hash")
	if _, err := parseArgs(e, fs, tokenHashHelp, args); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(e.stdin, 64<<10))
	if err != nil {
		return err
	}
	secret := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if secret == "" {
		return usagef(fs.Name(), "no token on stdin")
	}
	_, err = fmt.Fprintln(e.stdout, hashToken(secret))
	return err
}

// newToken makes a random token and its line of the tokens file: what
// token new prints and gen-secrets writes.
func newToken(name string, scopes []string, cwdPrefix string) (secret string, line []byte) {
	secret = "pi_" + secrets.Token()
	line, _ = json.Marshal(tokenLine{Name: name, SHA256: hashToken(secret), Scopes: scopes, CwdPrefix: cwdPrefix}) // strings only: it cannot fail
	return secret, line
}

// hashToken is what the file stores of a token: its sha256 in hex.
func hashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
