package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/store"
)

// Policy is the retention of one tenant's sessions (or the default's):
// archived once idle for ArchiveAfter, erased once idle for DeleteAfter,
// live or archived. 0 turns either off.
type Policy struct {
	// Tenant names the policy in the metrics and audit lines ("default"
	// for the default).
	Tenant string
	// CwdPrefix selects the tenant's sessions: those whose cwd is under it
	// (the tenant tokens' cwdPrefix, docs/API.md).
	CwdPrefix    string
	ArchiveAfter time.Duration
	DeleteAfter  time.Duration
}

// Policies is the retention of a deployment: a policy per tenant, the
// longest matching CwdPrefix winning, and a default for every other
// session.
type Policies struct {
	Default Policy
	Tenants []Policy
}

// Uniform is the policy of --session-retention alone: every session
// archived after d, none erased.
func Uniform(d time.Duration) Policies {
	return Policies{Default: Policy{Tenant: "default", ArchiveAfter: d}}
}

// For is the policy of a session started in cwd.
func (p Policies) For(cwd string) Policy {
	best := -1
	for i, t := range p.Tenants {
		if store.CwdUnder(cwd, t.CwdPrefix) && (best < 0 || len(t.CwdPrefix) > len(p.Tenants[best].CwdPrefix)) {
			best = i
		}
	}
	if best < 0 {
		return p.Default
	}
	return p.Tenants[best]
}

// Active reports whether any policy archives or erases anything.
func (p Policies) Active() bool {
	for _, t := range append([]Policy{p.Default}, p.Tenants...) {
		if t.ArchiveAfter > 0 || t.DeleteAfter > 0 {
			return true
		}
	}
	return false
}

// erases reports whether any policy erases sessions.
func (p Policies) erases() bool {
	for _, t := range append([]Policy{p.Default}, p.Tenants...) {
		if t.DeleteAfter > 0 {
			return true
		}
	}
	return false
}

// policyFile is the JSON of a retention policy file (docs/OPERATIONS.md,
// "Retention per tenant").
type policyFile struct {
	Default *policyJSON  `json:"default"`
	Tenants []policyJSON `json:"tenants"`
}

type policyJSON struct {
	Tenant       string `json:"tenant"`
	CwdPrefix    string `json:"cwdPrefix"`
	ArchiveAfter string `json:"archiveAfter"`
	DeleteAfter  string `json:"deleteAfter"`
}

// ParsePolicies reads a retention policy file; an error names the field.
func ParsePolicies(b []byte) (Policies, error) {
	var f policyFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Policies{}, fmt.Errorf("retention policy: %w", err)
	}
	var out Policies
	if f.Default != nil {
		p, err := f.Default.policy("default")
		if err != nil {
			return Policies{}, err
		}
		if f.Default.CwdPrefix != "" {
			return Policies{}, fmt.Errorf("retention policy: default.cwdPrefix: the default covers every session not under a tenant's prefix")
		}
		out.Default = p
	}
	out.Default.Tenant = "default"
	seen := map[string]bool{}
	for i, t := range f.Tenants {
		field := fmt.Sprintf("tenants[%d]", i)
		p, err := t.policy(field)
		if err != nil {
			return Policies{}, err
		}
		switch {
		case t.Tenant == "" || t.Tenant == "default":
			return Policies{}, fmt.Errorf("retention policy: %s.tenant: a name other than %q is required", field, "default")
		case !strings.HasPrefix(t.CwdPrefix, "/") || path.Clean(t.CwdPrefix) != t.CwdPrefix:
			return Policies{}, fmt.Errorf("retention policy: %s.cwdPrefix: %q is not a clean absolute directory", field, t.CwdPrefix)
		case seen[t.CwdPrefix]:
			return Policies{}, fmt.Errorf("retention policy: %s.cwdPrefix: %q has a policy already", field, t.CwdPrefix)
		}
		seen[t.CwdPrefix] = true
		out.Tenants = append(out.Tenants, p)
	}
	return out, nil
}

func (j policyJSON) policy(field string) (Policy, error) {
	p := Policy{Tenant: j.Tenant, CwdPrefix: j.CwdPrefix}
	var err error
	if p.ArchiveAfter, err = parseAge(j.ArchiveAfter); err != nil {
		return Policy{}, fmt.Errorf("retention policy: %s.archiveAfter: %w", field, err)
	}
	if p.DeleteAfter, err = parseAge(j.DeleteAfter); err != nil {
		return Policy{}, fmt.Errorf("retention policy: %s.deleteAfter: %w", field, err)
	}
	if p.ArchiveAfter > 0 && p.DeleteAfter > 0 && p.DeleteAfter <= p.ArchiveAfter {
		return Policy{}, fmt.Errorf("retention policy: %s.deleteAfter: %s is not after archiveAfter %s (set archiveAfter to 0 to erase live sessions without archiving them)", field, j.DeleteAfter, j.ArchiveAfter)
	}
	return p, nil
}

// parseAge reads "30d", "720h", "90m" or "" / "0" (off).
func parseAge(s string) (time.Duration, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a number of days like 30d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age like 30d or 720h", s)
	}
	return d, nil
}
