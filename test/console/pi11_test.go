//go:build linux

package console

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// line is what the checks read of a pi 1.1 session line.
type line struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	TargetID string `json:"targetId"`
	Kind     string `json:"kind"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Message  struct {
		Role       string             `json:"role"`
		Sections   map[string]*string `json:"sections"`
		ToolsAdded []struct {
			Name string `json:"name"`
		} `json:"toolsAdded"`
	} `json:"message"`
}

// fileLines are the entries of a session file in file order.
func fileLines(t *testing.T, file []byte) []line {
	t.Helper()
	var out []line
	sc := bufio.NewScanner(bytes.NewReader(file))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Type != "session" && l.ID != "" {
			out = append(out, l)
		}
	}
	return out
}

// pi11: pi 1.1.0's entries as what they are, on pi's own vectors
// (pi-v3-1.1): a context edit names its target and marks it edited in the
// tree, and the context says which entries the edits on its path change;
// a system message shows its sections and tools; a usage entry its model
// and cost, and the session's usage rolls up per model (pi's breakdown,
// following live appends); a compaction's checkpoint of the system prompt
// comes first in the context, the cut after the summary.
func (s *suite) pi11(t *testing.T) {
	b := s.b
	byName := map[string]*vector{}
	for _, v := range loadVectorSet(t, "pi-v3-1.1") {
		byName[v.name] = v
	}
	edits, system, usage := byName["p05-context-edits"], byName["p07-system-messages"], byName["p08-usage"]
	if edits == nil || system == nil || usage == nil {
		t.Fatal("pi-v3-1.1 cases p05-context-edits, p07-system-messages or p08-usage not found")
	}
	for _, v := range []*vector{edits, system, usage} {
		sid, _ := s.nd.importFile(t, v.file)
		if sid != v.exp.SessionID {
			t.Fatalf("%s: imported as %s, pi's id is %s", v.name, sid, v.exp.SessionID)
		}
		s.sids[sid] = true
	}

	t.Run("ContextEdit", func(t *testing.T) {
		lines := fileLines(t, edits.file)
		at := map[string]int{}
		targets := map[string]bool{}
		for i, l := range lines {
			at[l.ID] = i
			if l.Type == "context_edit" {
				targets[l.TargetID] = true
			}
		}
		// The edit nearest its target in the file: both rows in one view.
		var edit, target string
		best := len(lines)
		for i, l := range lines {
			if j, ok := at[l.TargetID]; ok && l.Type == "context_edit" && i-j < best && i > j {
				edit, target, best = l.ID, l.TargetID, i-j
			}
		}
		if edit == "" {
			t.Fatal("p05-context-edits: no context_edit after its target")
		}
		sid := edits.exp.SessionID
		b.open(t, "#/s/"+sid+"/e/"+edit)
		b.poll(t, "the edit and its target drawn", sessionReady(edit)+` && !!document.querySelector(`+js(rowSel(target))+`)`, viewTimeout)
		summary := evalJS[string](t, b, `document.querySelector(`+js(rowSel(edit)+` .summary`)+`).textContent`)
		if !strings.HasPrefix(summary, "edit of "+target) {
			t.Errorf("the edit's row says %q, want it to name its target (edit of %s…)", summary, target)
		}
		drawn := evalJS[[]struct {
			ID     string `json:"id"`
			Type   string `json:"type"`
			Edited bool   `json:"edited"`
		}](t, b, `[...document.querySelectorAll('div.row[role=treeitem][data-id]')].map(r => ({id: r.dataset.id, type: r.dataset.type, edited: !!r.querySelector('.edited')}))`)
		marked := 0
		for _, r := range drawn {
			if r.Edited != targets[r.ID] {
				t.Errorf("row %s (%s): edited mark %v, but a context_edit names it: %v", r.ID, r.Type, r.Edited, targets[r.ID])
			}
			if r.Edited {
				marked++
			}
		}
		if marked == 0 {
			t.Errorf("no row drawn marked edited (%d rows, target %s among them)", len(drawn), target)
		}
		b.poll(t, "the context at the edit", `JSON.parse(document.querySelector('pre#context-json').textContent || '{}').leafId === `+js(edit), viewTimeout)
		note := evalJS[string](t, b, `document.querySelector('#context-info .edit-note')?.textContent ?? ''`)
		if !strings.Contains(note, target) {
			t.Errorf("the context's info says %q about edits, want it to name %s (edited on the path)", note, target)
		}
	})

	t.Run("SystemMessage", func(t *testing.T) {
		var sm line
		for _, l := range fileLines(t, system.file) {
			if l.Message.Role == "system" && len(l.Message.Sections) > 0 && len(l.Message.ToolsAdded) > 0 {
				sm = l
				break
			}
		}
		if sm.ID == "" {
			t.Fatal("p07-system-messages: no system message with sections and tools")
		}
		sid := system.exp.SessionID
		b.open(t, "#/s/"+sid+"/e/"+sm.ID)
		b.poll(t, "the system message's row", sessionReady(sm.ID), viewTimeout)
		summary := evalJS[string](t, b, `document.querySelector(`+js(rowSel(sm.ID)+` .summary`)+`).textContent`)
		if typ := evalJS[string](t, b, `document.querySelector(`+js(rowSel(sm.ID))+`).dataset.type`); typ != "system" {
			t.Errorf("the system message's row has data-type %q, want system", typ)
		}
		if !strings.HasPrefix(summary, "system:") || !strings.Contains(summary, "+ tools "+sm.Message.ToolsAdded[0].Name) {
			t.Errorf("the system message's row says %q, want its sections and tools (+ tools %s…)", summary, sm.Message.ToolsAdded[0].Name)
		}

		// A leaf whose context starts with a compaction's checkpoint.
		var leaf string
		contexts := struct {
			Contexts []struct {
				LeafID   *string `json:"leafId"`
				Messages []struct {
					Role     string            `json:"role"`
					Sections map[string]string `json:"sections"`
				} `json:"messages"`
			} `json:"contexts"`
		}{}
		if err := json.Unmarshal(system.expected, &contexts); err != nil {
			t.Fatal(err)
		}
		for _, c := range contexts.Contexts {
			if c.LeafID != nil && len(c.Messages) > 1 && c.Messages[0].Role == "system" && len(c.Messages[0].Sections) > 0 && c.Messages[1].Role == "compactionSummary" {
				leaf = *c.LeafID
				break
			}
		}
		if leaf == "" {
			t.Fatal("p07-system-messages: no context starting with a compaction's checkpoint")
		}
		b.open(t, "#/s/"+sid+"/e/"+leaf)
		b.poll(t, "the context at "+leaf, sessionReady(leaf)+` && JSON.parse(document.querySelector('pre#context-json').textContent || '{}').leafId === `+js(leaf)+
			` && document.querySelectorAll('#context-agent .message').length > 1`, viewTimeout)
		checkContext(t, b, system, leaf)
		for _, col := range []string{"#context-agent", "#context-llm"} {
			got := evalJS[struct {
				Roles []string `json:"roles"`
				Cut   int      `json:"cut"`
				Body  string   `json:"body"`
			}](t, b, `(() => { const ms = [...document.querySelectorAll(`+js(col+` .message`)+`)];
				return {roles: ms.slice(0, 2).map(m => m.dataset.role), cut: ms.findIndex(m => m.nextElementSibling?.classList.contains('cut')),
					body: ms[0]?.querySelector('.message-body')?.textContent ?? ''}; })()`)
			if len(got.Roles) < 2 || got.Roles[0] != "system" || (col == "#context-agent" && got.Roles[1] != "compactionSummary") {
				t.Errorf("%s starts with %v, want the checkpoint (system) then the compaction's summary", col, got.Roles)
			}
			if got.Cut != 1 {
				t.Errorf("%s: the cut after message %d, want after the summary (1)", col, got.Cut)
			}
			if !strings.Contains(got.Body, "[section ") {
				t.Errorf("%s: the checkpoint's text %q shows no section", col, got.Body)
			}
		}
	})

	t.Run("Usage", func(t *testing.T) {
		var u line
		for _, l := range fileLines(t, usage.file) {
			if l.Type == "usage" {
				u = l
				break
			}
		}
		if u.ID == "" {
			t.Fatal("p08-usage: no usage entry")
		}
		b.open(t, "#/s/"+usage.exp.SessionID+"/e/"+u.ID)
		b.poll(t, "the usage entry's row", sessionReady(u.ID), viewTimeout)
		summary := evalJS[string](t, b, `document.querySelector(`+js(rowSel(u.ID)+` .summary`)+`).textContent`)
		if want := "usage " + u.Kind + ": " + u.Provider + "/" + u.Model + " · "; !strings.HasPrefix(summary, want) || !strings.Contains(summary, "tokens") {
			t.Errorf("the usage entry's row says %q, want %q… with its tokens", summary, want)
		}

		// The roll-up per model: pi's usageBreakdown, row for row.
		var exp struct {
			Usage []usageRow `json:"usageBreakdown"`
		}
		if err := json.Unmarshal(usage.expected, &exp); err != nil || len(exp.Usage) == 0 {
			t.Fatalf("p08-usage: expected.json's usageBreakdown: %v (%d rows)", err, len(exp.Usage))
		}
		if got := usagePanel(t, b); !sameUsage(got, exp.Usage) {
			t.Errorf("the usage panel shows %v, want pi's breakdown %v", got, exp.Usage)
		}

		// A usage entry appended live moves its model's row.
		sid := usage.exp.SessionID
		leaf := s.nd.leaf(t, sid)
		body := fmt.Sprintf(`{"entries":[{"type":"usage","id":"feedc0de","parentId":%q,"timestamp":%q,"kind":"live","provider":"console","model":"test-model",`+
			`"usage":{"input":1000,"output":234,"cacheRead":0,"cacheWrite":0,"totalTokens":1234,"cost":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"total":2}}}]}`,
			leaf, time.Now().UTC().Format(time.RFC3339Nano))
		s.nd.call(t, s.nd.writeClient, http.MethodPost, "/v1/sessions/"+sid+"/entries", []byte(body), http.StatusOK)
		b.poll(t, "the live usage in the panel", `!!document.querySelector('#usage tr[data-key="console/test-model"]')`, viewTimeout)
		got := usagePanel(t, b)
		want := slices.Clone(exp.Usage)
		at, _ := slices.BinarySearchFunc(want, 2.0, func(r usageRow, cost float64) int { return cmp.Compare(cost, r.Cost) })
		want = slices.Insert(want, at, usageRow{Key: "console/test-model", Cost: 2, Tokens: 1234})
		if !sameUsage(got, want) {
			t.Errorf("after a live usage entry of $2 and 1234 tokens the panel shows %v, want %v", got, want)
		}
	})
}

// usageRow is a row of a usage breakdown: pi's, or the console's panel.
type usageRow struct {
	Key    string  `json:"key"`
	Cost   float64 `json:"cost"`
	Tokens float64 `json:"tokens"`
}

// usagePanel reads the session view's usage rows (cost as shown, to 4
// decimals).
func usagePanel(t *testing.T, b *tab) []usageRow {
	t.Helper()
	return evalJS[[]usageRow](t, b, `[...document.querySelectorAll('#usage tbody tr')].map(r => ({key: r.dataset.key,
		tokens: Number(r.children[1].textContent), cost: Number(r.children[2].textContent.replace('$', ''))}))`)
}

// sameUsage: the rows in order, tokens exact, cost as the panel rounds it.
func sameUsage(got, want []usageRow) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].Key != want[i].Key || got[i].Tokens != want[i].Tokens || math.Abs(got[i].Cost-want[i].Cost) > 0.00005 {
			return false
		}
	}
	return true
}
