package api

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/pifleet/sessionlog/internal/wire"
)

// The scopes of an HTTP token (docs/API.md, Auth), as wire declares them.
const (
	ScopeRead  = wire.ScopeRead
	ScopeWrite = wire.ScopeWrite
	ScopeAdmin = wire.ScopeAdmin
)

// opScopes is the scope each operation needs (wire.Op.Scope). Every
// operation of wire.Ops must have one (init panics otherwise, and
// TestScopesPerOp checks each decision), so that a new operation cannot be
// served without one.
var opScopes = map[string]string{}

// ScopeOf returns the scope operation op needs ("" for an unknown one).
func ScopeOf(op string) string { return opScopes[op] }

func init() {
	for _, o := range wire.Ops {
		if opScopes[o.Name] = o.Scope(); opScopes[o.Name] == "" {
			panic("api: operation " + o.Name + " has no scope (wire.Op.Scope)") // a programming error, caught by every test
		}
	}
}

// TokenLine is one line of a tokens file: a JSON object naming the token,
// the SHA-256 of its secret (hex; the secret itself is never stored), its
// scopes and optionally the working directory it is confined to (a
// tenant: tenant.go).
type TokenLine struct {
	Name      string   `json:"name"`
	SHA256    string   `json:"sha256"`
	Scopes    []string `json:"scopes"`
	CwdPrefix string   `json:"cwdPrefix,omitempty"`
}

// HashToken is the sha256 hex of a token's secret, as a tokens file stores
// it (the same as `printf %s TOKEN | sha256sum`).
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Tokens is a set of scoped bearer tokens (ParseTokens, LoadTokens). It is
// immutable; a reload builds another and swaps it in with SetTokens.
type Tokens struct {
	list []token
}

type token struct {
	name      string
	sum       [sha256.Size]byte
	scopes    []string
	cwdPrefix string
}

// Len is the number of tokens in the set.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.list)
}

// LoadTokens reads and parses a tokens file (ParseTokens); its errors name
// the file and the line.
func LoadTokens(path string) (*Tokens, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	t, err := ParseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return t, nil
}

// ParseTokens parses a tokens file: one JSON object (TokenLine) per line;
// blank lines and lines starting with # are skipped. Names and hashes are
// unique, every token has at least one scope and knows each of them; a
// cwdPrefix is an absolute path, on a token without admin. An
// error names its line ("line 3: ...") and never holds a secret (the file
// holds none).
func ParseTokens(data []byte) (*Tokens, error) {
	t := &Tokens{}
	names, sums := map[string]int{}, map[[sha256.Size]byte]int{}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		line := bytes.TrimSpace(raw)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("line %d: %s", n, fmt.Sprintf(format, args...))
		}
		var tl TokenLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&tl); err != nil {
			return nil, fail("not a token object {\"name\",\"sha256\",\"scopes\"}: %v", err)
		}
		if dec.More() {
			return nil, fail("more than one JSON value")
		}
		tok := token{name: tl.Name}
		switch {
		case tl.Name == "" || strings.ContainsAny(tl.Name, " \t\r\n\""):
			return nil, fail("name must be non-empty, without spaces or quotes")
		case names[tl.Name] != 0:
			return nil, fail("name %q is also on line %d", tl.Name, names[tl.Name])
		case len(tl.SHA256) != hex.EncodedLen(sha256.Size):
			return nil, fail("sha256 must be 64 hex digits (the hash of the token, not the token)")
		}
		// The value is not quoted back: it may be a secret put in by mistake.
		if _, err := hex.Decode(tok.sum[:], []byte(strings.ToLower(tl.SHA256))); err != nil {
			return nil, fail("sha256 must be 64 hex digits (the hash of the token, not the token)")
		}
		if prev := sums[tok.sum]; prev != 0 {
			return nil, fail("the same token as line %d", prev)
		}
		if len(tl.Scopes) == 0 {
			return nil, fail("no scopes (read, write, admin)")
		}
		for _, sc := range tl.Scopes {
			if sc != ScopeRead && sc != ScopeWrite && sc != ScopeAdmin {
				return nil, fail("unknown scope %q (read, write, admin)", sc)
			}
			if !slices.Contains(tok.scopes, sc) {
				tok.scopes = append(tok.scopes, sc)
			}
		}
		if tl.CwdPrefix != "" {
			switch {
			case !strings.HasPrefix(tl.CwdPrefix, "/"):
				return nil, fail("cwdPrefix %q must be an absolute path", tl.CwdPrefix)
			case slices.Contains(tok.scopes, ScopeAdmin):
				return nil, fail("a token with a cwdPrefix cannot have scope admin (it covers every session)")
			}
			tok.cwdPrefix = path.Clean(tl.CwdPrefix)
		}
		names[tl.Name], sums[tok.sum] = n, n
		t.list = append(t.list, tok)
	}
	return t, nil
}

// principal is who a request comes from: a token's name and scopes, and
// the working directory it is confined to ("": none).
type principal struct {
	name      string
	scopes    []string
	cwdPrefix string
}

// has reports whether p may do what scope allows (admin: everything).
func (p *principal) has(scope string) bool {
	return slices.Contains(p.scopes, ScopeAdmin) || slices.Contains(p.scopes, scope)
}

// Principals of the requests that carry no token.
var (
	// anyone: HTTP without --http-token(s); nothing is checked.
	anyone = &principal{name: "-", scopes: []string{ScopeAdmin}}
	// natsPeer: a client's request on the NATS transport, which the NATS
	// server authorized by its subject. Only a request a client published
	// gets it: what the server sends on its own (JetStream deliveries)
	// passed no such check and is dropped (notARequest).
	natsPeer = &principal{name: "nats", scopes: []string{ScopeAdmin}}
)

// tokenSet is the set in force: the file's tokens plus Config.Token.
type tokenSet struct {
	on   bool // auth is required
	list []token
}

// newTokenSet merges the single admin token (--http-token) into t.
func newTokenSet(single string, t *Tokens) *tokenSet {
	ts := &tokenSet{on: single != "" || t != nil}
	if t != nil {
		ts.list = append(ts.list, t.list...)
	}
	if single != "" {
		ts.list = append(ts.list, token{name: "http-token", sum: sha256.Sum256([]byte(single)), scopes: []string{ScopeAdmin}})
	}
	return ts
}

// SetTokens replaces the scoped tokens (a reload of the tokens file);
// Config.Token, if set, stays valid. Requests already past their check
// are not affected; the next request of every connection is checked
// against the new set. nil leaves only Config.Token (or no auth at all).
func (s *Server) SetTokens(t *Tokens) {
	s.tokens.Store(newTokenSet(s.cfg.Token, t))
}

// authenticate finds the token of the request's bearer header, comparing
// its SHA-256 with every stored hash in constant time (and without
// stopping at a match, so the position in the file does not leak).
func (s *Server) authenticate(ts *tokenSet, r *http.Request) (*principal, error) {
	if !ts.on {
		return anyone, nil
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, errUnauthorized
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	var found *token
	for i := range ts.list {
		if subtle.ConstantTimeCompare(got[:], ts.list[i].sum[:]) == 1 {
			found = &ts.list[i]
		}
	}
	if found == nil {
		return nil, errUnauthorized
	}
	return &principal{name: found.name, scopes: found.scopes, cwdPrefix: found.cwdPrefix}, nil
}

// authorize checks that p may run op.
func authorize(p *principal, op string) error {
	need := opScopes[op]
	if need == "" {
		need = ScopeAdmin // unreachable: init checks every operation
	}
	if p.has(need) {
		return nil
	}
	return &forbidden{op: op, scope: need, token: p.name}
}

// forbidden is a 403: the token is known, its scopes do not cover op.
type forbidden struct{ op, scope, token string }

func (f *forbidden) Error() string {
	return fmt.Sprintf("operation %s needs scope %q, which token %q does not have", f.op, f.scope, f.token)
}
func (f *forbidden) Unwrap() error { return wire.ErrForbidden }
