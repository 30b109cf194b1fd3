package api_test

import (
	"testing"

	"github.com/pifleet/sessionlog/internal/wire"
)

// TestHeaderTimestampRefused: a header timestamp that is not an RFC 3339
// time is refused on create and import, naming the field; pi-ctl checkout
// makes a file name of it, and "../../x/y" made folders.
func TestHeaderTimestampRefused(t *testing.T) {
	e := newEnv(t)
	bad := []string{`../../x/y`, `..\\..\\x`, `2026-01-02T03:04:05.678Z/..`, `yesterday`, `2026-01-02 03:04:05`}
	for k, ts := range bad {
		e.fails(400, wire.CodeInvalid, "header.timestamp", "POST", "/v1/sessions", `{"header":{"timestamp":"`+ts+`"}}`)
		sid := "01a22bdc-6ce8-7741-8406-3ad384bc1c0" + itoa(k)
		file := "\n" + `{"type":"session","version":3,"id":"` + sid + `","timestamp":"` + ts + `","cwd":"/"}` + "\n" +
			`{"type":"model_change","id":"aaaaaaaa","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","provider":"p","modelId":"m"}` + "\n"
		for _, path := range []string{"/v1/import", "/v1/import?strict=true"} {
			e.fails(400, wire.CodeInvalid, "line 2.timestamp", "POST", path, file)
		}
		e.fails(404, wire.CodeNotFound, "sessionId", "GET", "/v1/sessions/"+sid, nil)
	}
	// pi's own form, and RFC 3339 as other writers may put it.
	for k, ts := range []string{"2026-01-02T03:04:05.678Z", "2026-01-02T03:04:05Z", "2026-01-02T04:04:05.678+01:00"} {
		e.ok(201, "POST", "/v1/sessions", `{"header":{"timestamp":"`+ts+`"}}`, nil)
		sid := "01a22bdc-6ce8-7741-8406-3ad384bc1d0" + itoa(k)
		e.ok(201, "POST", "/v1/import?strict=true", `{"type":"session","version":3,"id":"`+sid+`","timestamp":"`+ts+`","cwd":"/"}`+"\n", nil)
	}
}
