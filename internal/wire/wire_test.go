package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestImports keeps wire light: the standard library and internal/tree
// (with its own subpackage jsjson) only, so that a client of the API never
// links the engine or NATS.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := []string{"github.com/pifleet/sessionlog/internal/wire", "github.com/pifleet/sessionlog/internal/tree", "github.com/pifleet/sessionlog/internal/tree/jsjson"}
	for _, p := range strings.Fields(string(out)) {
		if !slices.Contains(allowed, p) {
			t.Errorf("wire depends on %s; it may import only the standard library and internal/tree", p)
		}
	}
}

// TestTable checks the operation table against the requests: one request
// type per operation, in order; names, routes and subjects unique; every
// path wildcard filled by exactly one tagged field.
func TestTable(t *testing.T) {
	reqs := Requests()
	if len(reqs) != len(Ops) {
		t.Fatalf("%d requests for %d operations", len(reqs), len(Ops))
	}
	seen := map[string]bool{}
	for i, o := range Ops {
		if got := reqs[i].Op(); got != o {
			t.Errorf("Requests()[%d] is %s's, want %s's", i, got.Name, o.Name)
		}
		for _, k := range []string{"name " + o.Name, "route " + o.Route(), "subject " + o.Subject} {
			if seen[k] && k != "subject " {
				t.Errorf("%s twice", k)
			}
			seen[k] = true
		}
		if !o.HTTPOnly() && o.Subject != SubjectPrefix+o.Name {
			t.Errorf("%s: subject %q", o.Name, o.Subject)
		}
		var tagged []string
		for _, w := range pathFields(reflect.TypeOf(reqs[i])) {
			tagged = append(tagged, w)
		}
		for _, w := range o.pathParams() {
			if !slices.Contains(tagged, w) {
				t.Errorf("%s: no field tagged path:%q fills {%s}", o.Name, w, w)
			}
		}
		if f, ok := reflect.TypeOf(reqs[i]).FieldByName("MinSeq"); !ok || f.Tag.Get("json") != "minSeq,omitempty" {
			t.Errorf("%s: every request carries minSeq", o.Name)
		}
		if f, ok := reflect.TypeOf(reqs[i]).FieldByName("Consistency"); ok != o.LogRead() || ok && f.Tag.Get("json") != "consistency,omitempty" {
			t.Errorf("%s: a request carries consistency exactly when its operation reads the log (LogRead %v)", o.Name, o.LogRead())
		}
	}
}

// TestEncode lays requests out for both transports: path parameters
// escaped, the rest in the query of a GET and in the body of a PUT, null
// as "null", the minSeq floor applied.
func TestEncode(t *testing.T) {
	rev := uint64(0)
	for _, c := range []struct {
		req                  Request
		method, target, body string
		subject, natsBody    string
	}{
		{ContextRequest{SessionID: "s", Leaf: NullID(), Format: "llm"}, "GET", "/v1/sessions/s/context?format=llm&leaf=null&minSeq=7", "",
			"pi.v1.context", `{"sessionId":"s","leaf":null,"format":"llm","minSeq":7}`},
		{CursorSetRequest{SessionID: "s", Client: "a/b", LeafID: EntryID("x"), ExpectRevision: &rev}, "PUT", "/v1/sessions/s/cursors/a%2Fb", `{"leafId":"x","expectRevision":0,"minSeq":7}`,
			"pi.v1.cursor.set", `{"sessionId":"s","client":"a/b","leafId":"x","expectRevision":0,"minSeq":7}`},
		{ListRequest{MinSeq: 9, Name: "a&b"}, "GET", "/v1/sessions?minSeq=9&name=a%26b", "", "pi.v1.list", `{"name":"a&b","minSeq":9}`},
		{AppendRequest{SessionID: "s", Client: "c", Entries: []json.RawMessage{json.RawMessage(`{"a": "<"}`)}}, "POST", "/v1/sessions/s/entries", `{"entries":[{"a":"<"}],"client":"c","minSeq":7}`,
			"pi.v1.append", `{"sessionId":"s","entries":[{"a":"<"}],"client":"c","minSeq":7}`},
		{ImportRequest{File: []byte("{}\n")}, "POST", "/v1/import?minSeq=7", "{}\n", "pi.v1.import", "{}\n"},
		{ImportRequest{File: []byte("{}\n"), Strict: true}, "POST", "/v1/import?minSeq=7&strict=true", "{}\n", "pi.v1.import", "{}\n"},
		{ArchiveRestoreRequest{SessionID: "s"}, "POST", "/v1/archive/s/restore", `{"minSeq":7}`, "pi.v1.archive.restore", `{"sessionId":"s","minSeq":7}`},
	} {
		h, err := EncodeHTTP(c.req, 7)
		if err != nil {
			t.Fatal(err)
		}
		target := h.Path
		if len(h.Query) > 0 {
			target += "?" + h.Query.Encode()
		}
		if h.Method != c.method || target != c.target || string(h.Body) != c.body {
			t.Errorf("%s over HTTP: %s %s %s", c.req.Op().Name, h.Method, target, h.Body)
		}
		subj, data, err := EncodeNATS(c.req, 7)
		if err != nil || subj != c.subject || string(data) != c.natsBody {
			t.Errorf("%s over NATS: %s %s %v", c.req.Op().Name, subj, data, err)
		}
	}
	if h := NATSHeader(ImportRequest{Strict: true}); len(h[HeaderStrict]) != 1 || h[HeaderStrict][0] != "true" {
		t.Errorf("strict import's NATS header: %v", h)
	}
	if h := NATSHeader(ImportRequest{}); h != nil {
		t.Errorf("lenient import's NATS header: %v", h)
	}
	if _, _, err := EncodeNATS(WatchRequest{}, 0); err == nil {
		t.Error("watch was encoded for NATS")
	}
}

// TestErrorsBothWays maps every sentinel to its reply and back.
func TestErrorsBothWays(t *testing.T) {
	for _, c := range []struct {
		op   string
		err  error
		code string
	}{
		{"get", fmt.Errorf("session x: %w", ErrNotFound), CodeNotFound},
		{"append", Invalid("entries[0].parentId", "unknown parent"), CodeInvalid},
		{"append", &ConflictError{LastSeq: 9, Reason: "stale"}, CodeConflict},
		{"import", fmt.Errorf("session x: %w", ErrExists), CodeConflict},
		{"get", ErrTooLarge, CodeTooLarge},
		{"get", ErrUnavailable, CodeUnavailable},
		{"get", ErrTimeout, CodeTimeout},
		{"status", ErrUnauthorized, CodeUnauthorized},
		{"append", fmt.Errorf("needs scope write: %w", ErrForbidden), CodeForbidden},
	} {
		status, d, known := StatusOf(c.err)
		back := ErrorOf(c.op, status, d)
		if !known || d.Code != c.code || !sameSentinel(c.err, back) {
			t.Errorf("%v: %d %+v, back %v", c.err, status, d, back)
		}
	}
	var fe *FieldError
	if _, d, _ := StatusOf(Invalid("limit", "bad")); !errors.As(ErrorOf("list", 400, d), &fe) || fe.Field != "limit" || fe.Reason != "bad" {
		t.Errorf("field error back: %v", fe)
	}
	if status, d, known := StatusOf(errors.New("disk on fire")); known || status != 500 || strings.Contains(d.Message, "fire") {
		t.Errorf("unknown error: %d %+v", status, d)
	}
}

func sameSentinel(a, b error) bool {
	for _, s := range []error{ErrNotFound, ErrExists, ErrConflict, ErrInvalid, ErrTooLarge, ErrUnavailable, ErrTimeout, ErrUnauthorized, ErrForbidden} {
		if errors.Is(a, s) != errors.Is(b, s) {
			return false
		}
	}
	return true
}

// pathParams returns the wildcards of the operation's path, in order.
func (o Op) pathParams() []string {
	var out []string
	for rest := o.Path; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(rest[i:], '}')
		out = append(out, rest[i+1:i+j])
		rest = rest[i+j:]
	}
}
