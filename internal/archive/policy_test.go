package archive_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/archive"
	"github.com/pifleet/sessionlog/internal/wire"
)

// ParsePolicies reads ages in days or Go durations, picks the longest
// prefix, and names the field of every mistake.
func TestParsePolicies(t *testing.T) {
	p, err := archive.ParsePolicies([]byte(`{"default":{"archiveAfter":"30d"},"tenants":[
		{"tenant":"a","cwdPrefix":"/work/a","archiveAfter":"7d","deleteAfter":"90d"},
		{"tenant":"a-ci","cwdPrefix":"/work/a/ci","deleteAfter":"36h"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for cwd, want := range map[string]string{"/work/a/x": "a", "/work/a/ci/run": "a-ci", "/work/ab": "default", "/home": "default", "": "default"} {
		if got := p.For(cwd).Tenant; got != want {
			t.Errorf("For(%q) = %s, want %s", cwd, got, want)
		}
	}
	if a := p.For("/work/a"); a.ArchiveAfter != 7*24*time.Hour || a.DeleteAfter != 90*24*time.Hour {
		t.Errorf("tenant a: %+v", a)
	}
	if ci := p.For("/work/a/ci"); ci.ArchiveAfter != 0 || ci.DeleteAfter != 36*time.Hour {
		t.Errorf("tenant a-ci: %+v", ci)
	}
	for file, want := range map[string]string{
		`{"default":{"archiveAfter":"soon"}}`:                                                  "default.archiveAfter",
		`{"tenants":[{"tenant":"x","cwdPrefix":"/x","deleteAfter":"-1d"}]}`:                    "tenants[0].deleteAfter",
		`{"tenants":[{"tenant":"x","cwdPrefix":"x"}]}`:                                         "tenants[0].cwdPrefix",
		`{"tenants":[{"cwdPrefix":"/x"}]}`:                                                     "tenants[0].tenant",
		`{"tenants":[{"tenant":"x","cwdPrefix":"/x"},{"tenant":"y","cwdPrefix":"/x"}]}`:        "tenants[1].cwdPrefix",
		`{"tenants":[{"tenant":"x","cwdPrefix":"/x","archiveAfter":"9d","deleteAfter":"8d"}]}`: "tenants[0].deleteAfter",
		`{"default":{"cwdPrefix":"/x"}}`:                                                       "default.cwdPrefix",
		`{"defaults":{}}`:                                                                      "unknown field",
	} {
		if _, err := archive.ParsePolicies([]byte(file)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", file, err, want)
		}
	}
}

// TestPolicyPass: three tenants' sessions, idle 2.5 hours by the
// Archiver's clock. A dry run lists tenant a's to archive (archiveAfter
// 1h) and tenant b's to erase (deleteAfter 2h), the default's (4h) not at
// all, and changes nothing; the pass does it, counted per tenant, each
// erasure in the ledger by "retention:b". An hour later tenant a's copies
// are past its deleteAfter (3h): the next pass erases them from the
// archive. The default's sessions stay live throughout.
func TestPolicyPass(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pol := archive.Policies{Default: archive.Policy{Tenant: "default", ArchiveAfter: 4 * time.Hour}, Tenants: []archive.Policy{
		{Tenant: "a", CwdPrefix: "/t/a", ArchiveAfter: time.Hour, DeleteAfter: 3 * time.Hour},
		{Tenant: "b", CwdPrefix: "/t/b", DeleteAfter: 2 * time.Hour},
	}}
	byCwd := map[string][]string{}
	tenantOf := map[string]string{}
	for _, cwd := range []string{"/t/a/1", "/t/a/2", "/t/b", "/t/b/x", "/home/c"} {
		h, _ := json.Marshal(map[string]any{"cwd": cwd})
		res, err := f.svc.Create(ctx, wire.CreateRequest{Header: h, Entries: []json.RawMessage{entryJSON("in " + cwd)}})
		if err != nil {
			t.Fatal(err)
		}
		f.wait(f.store, res.LastSeq)
		byCwd[cwd] = append(byCwd[cwd], res.SessionID)
		tenantOf[res.SessionID] = pol.For(cwd).Tenant
	}
	f.clock.advance(150 * time.Minute)

	dry, err := f.a.PolicyPass(ctx, pol, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for sid, tenant := range tenantOf {
		switch tenant {
		case "a":
			want[sid] = "archive/log"
		case "b":
			want[sid] = "erase/log"
		}
	}
	got := map[string]string{}
	for _, p := range dry.Planned {
		got[p.SessionID] = p.Action + "/" + p.Where
		if p.Tenant != tenantOf[p.SessionID] {
			t.Errorf("planned %+v: tenant %s", p, tenantOf[p.SessionID])
		}
	}
	if !dry.DryRun || len(got) != len(want) {
		t.Fatalf("dry run planned %v, want %v", got, want)
	}
	for sid, w := range want {
		if got[sid] != w {
			t.Errorf("dry run: %s %s, want %s", sid, got[sid], w)
		}
	}
	for sid := range tenantOf {
		if !f.store.Has(sid) {
			t.Fatalf("the dry run removed %s", sid)
		}
	}

	res, err := f.a.PolicyPass(ctx, pol, false)
	if err != nil || res.Archived != 2 || res.Erased != 2 || res.Failed != 0 {
		t.Fatalf("pass: %+v %v, want 2 archived and 2 erased", res, err)
	}
	f.wait(f.store, f.logEnd())
	for sid, tenant := range tenantOf {
		copies, err := f.arch.Find(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		live := f.store.Has(sid)
		switch {
		case tenant == "a" && (live || len(copies) != 1):
			t.Errorf("tenant a's %s: live %v, %d copies; want archived", sid, live, len(copies))
		case tenant == "b" && (live || len(copies) != 0):
			t.Errorf("tenant b's %s: live %v, %d copies; want erased", sid, live, len(copies))
		case tenant == "default" && !live:
			t.Errorf("the default's %s is gone", sid)
		}
	}

	f.clock.advance(time.Hour)
	res, err = f.a.PolicyPass(ctx, pol, false)
	if err != nil || res.Erased != 2 || res.Archived != 0 {
		t.Fatalf("pass an hour later: %+v %v, want tenant a's 2 copies erased", res, err)
	}
	ledger, err := f.arch.Erasures(ctx)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]string{}
	for _, l := range ledger {
		by[l.Session] = l.By
	}
	for sid, tenant := range tenantOf {
		copies, _ := f.arch.Find(ctx, sid)
		if tenant != "default" && (len(copies) != 0 || by[sid] != "retention:"+tenant) {
			t.Errorf("tenant %s's %s: %d copies, ledger by %q", tenant, sid, len(copies), by[sid])
		}
		if tenant == "default" && (by[sid] != "" || !f.store.Has(sid)) {
			t.Errorf("the default's %s: ledger %q, live %v", sid, by[sid], f.store.Has(sid))
		}
	}
	st := f.a.Stats()
	if st.Retained[[2]string{"a", "archive"}] != 2 || st.Retained[[2]string{"a", "erase"}] != 2 || st.Retained[[2]string{"b", "erase"}] != 2 {
		t.Errorf("counted %v", st.Retained)
	}
}
