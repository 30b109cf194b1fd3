package api_test

import (
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/wire"
)

// TestImportDuplicateID: a file with an entry id twice is refused at once
// when strict and, lenient, imported without the later line, which
// Skipped names — not written, retried and refused as a conflict naming
// no line (it spun 48 s).
func TestImportDuplicateID(t *testing.T) {
	e := newEnv(t)
	const sid = "01a22bdc-6ce8-7741-8406-3ad384bc1b96"
	body := strings.Join([]string{
		`{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`,
		`{"type":"model_change","id":"aaaaaaaa","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","provider":"p","modelId":"m"}`,
		`{"type":"model_change","id":"aaaaaaaa","parentId":null,"timestamp":"2026-01-01T00:00:02.000Z","provider":"p","modelId":"other"}`,
		`{"type":"model_change","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"2026-01-01T00:00:03.000Z","provider":"p","modelId":"m2"}`,
	}, "\n") + "\n"
	msg := e.fails(400, wire.CodeInvalid, "line 3", "POST", "/v1/import?strict=true", body)
	if !strings.Contains(msg, `duplicate entry id "aaaaaaaa" (first on line 2)`) {
		t.Errorf("strict: %q", msg)
	}
	var res wire.ImportResult
	e.ok(201, "POST", "/v1/import", body, &res)
	if res.Entries != 2 || len(res.Skipped) != 1 || res.Skipped[0].Line != 3 ||
		!strings.Contains(res.Skipped[0].Reason, `duplicate entry id "aaaaaaaa"`) {
		t.Fatalf("lenient: %+v", res)
	}
	out := string(e.ok(200, "GET", "/v1/sessions/"+sid+"/export", nil, nil))
	if strings.Contains(out, `"other"`) || !strings.Contains(out, `"m2"`) {
		t.Errorf("export:\n%s", out)
	}
}
