//go:build linux

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pifleet/sessionlog/internal/proctest"
)

// oldPiFile is a pi file written days ago: a user question (first), an
// answer, a second question; its entries' timestamps start at at.
func oldPiFile(t *testing.T, at time.Time, question string) (sid string, file []byte, last time.Time) {
	t.Helper()
	sid = uuid.Must(uuid.NewV7()).String()
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":%q,"timestamp":%q,"cwd":"/work/old"}`+"\n", sid, proctest.Stamp(at))
	parent := "null"
	for i, m := range []struct{ role, text string }{{"user", question}, {"assistant", "an answer"}, {"user", "and then?"}} {
		last = at.Add(time.Duration(i+1) * time.Minute)
		extra := ""
		if m.role == "assistant" {
			extra = `,"api":"openai-completions","provider":"fake","model":"echo","stopReason":"stop"`
		}
		fmt.Fprintf(&b, `{"type":"message","id":"%08x","parentId":%s,"timestamp":%q,"message":{"role":%q,"content":[{"type":"text","text":%q}]%s,"timestamp":%d}}`+"\n",
			i, parent, proctest.Stamp(last), m.role, m.text, extra, last.UnixMilli())
		parent = fmt.Sprintf(`"%08x"`, i)
	}
	return sid, b.Bytes(), last
}

// TestCatalogAfterRestart: the catalog of imported history, as a listing
// with previews gives it (the console's sessions view, pi-ctl ls --cwd),
// dates each session by its last entry, as pi's /resume does, not by the
// import (a year of history all sorted as "just now", all of it listed by
// ls --since 1h); and it is the same after a plain restart of the node:
// every session keeps its first message and its time (they come back from
// the snapshot without their entries, and its index had no previews).
func TestCatalogAfterRestart(t *testing.T) {
	skipShort(t)
	t.Parallel()
	nd := startSingleNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	type want struct {
		first string
		last  time.Time
	}
	wants := map[string]want{}
	for i := range 22 {
		q := fmt.Sprintf("question %d: why is the build red?", i)
		sid, file, last := oldPiFile(t, time.Now().AddDate(-1, 0, i).Truncate(time.Millisecond), q)
		mustDo(t, http.MethodPost, nd.base+"/v1/import", file, http.StatusCreated)
		wants[sid] = want{q, last}
	}
	check := func(when string) {
		t.Helper()
		st, _, body, err := proctest.Do(ctx, proctest.ProbeClient, http.MethodGet, nd.base+"/v1/sessions?preview=true&limit=100", nil)
		if err != nil || st != http.StatusOK {
			t.Fatalf("%s: list: %d %v %s", when, st, err, body)
		}
		var page struct {
			Sessions []struct {
				SessionID    string    `json:"sessionId"`
				Modified     time.Time `json:"modified"`
				FirstMessage *string   `json:"firstMessage"`
			} `json:"sessions"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("%s: %v: %s", when, err, body)
		}
		if len(page.Sessions) != len(wants) {
			t.Fatalf("%s: %d sessions, want %d", when, len(page.Sessions), len(wants))
		}
		lacking, dated := 0, 0
		for _, s := range page.Sessions {
			w := wants[s.SessionID]
			if s.FirstMessage == nil || *s.FirstMessage != w.first {
				lacking++
			}
			if !s.Modified.Equal(w.last) {
				if dated == 0 {
					t.Errorf("%s: session %s modified %v, want its last entry's time %v", when, s.SessionID, s.Modified, w.last)
				}
				dated++
			}
		}
		if lacking > 0 || dated > 0 {
			t.Errorf("%s: of %d sessions, %d without their first message, %d not dated by their last entry", when, len(wants), lacking, dated)
		}
		if out, err := runCtl(t, "ls", "--http", nd.base, "--since", "1h", "--all"); err != nil || strings.Contains(out, "/work/old") {
			t.Errorf("%s: pi-ctl ls --since 1h lists sessions a year old (%v):\n%s", when, err, out)
		}
	}
	check("after the import")
	if err := nd.Stop(time.Minute); err != nil {
		t.Fatal(err)
	}
	nd.Start(t)
	nd.waitReady(t)
	check("after a restart")
}
