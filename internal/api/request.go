package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// request is every input an operation may take. HTTP fills it from the
// JSON body, then the path and the query; NATS decodes it from the message
// body, where path and query parameters are plain fields. Fields an
// operation does not use are ignored, as are unknown JSON fields.
type request struct {
	// Path parameters (NATS: body fields).
	SessionID string `json:"sessionId"`
	Client    string `json:"client"` // also the append body's cursor client

	// Query parameters (NATS: body fields).
	MinSeq   uint64          `json:"minSeq"`
	AfterSeq uint64          `json:"afterSeq"`
	Limit    int             `json:"limit"`
	Leaf     wire.NullableID `json:"leaf,omitzero"`
	Format   string          `json:"format"`
	Cursor   string          `json:"cursor"`
	Name     string          `json:"name"`
	Cwd      string          `json:"cwd"`
	Label    string          `json:"label"`
	Since    string          `json:"since"`
	Preview  bool            `json:"preview"`   // list
	Include  string          `json:"include"`   // tree
	Form     string          `json:"form"`      // tree
	Month    string          `json:"month"`     // archive.list
	Older    string          `json:"olderThan"` // archive.run
	// Consistency of a log read: "" or wire.ConsistencyStrong.
	Consistency string `json:"consistency"`
	Strict      bool   `json:"strict"` // import (NATS: the Pi-Strict header)
	// cwdPrefix confines list to a tenant token's sessions (tenant.go);
	// set by the server, never by the client.
	cwdPrefix string

	// Bodies of create, append, cursor.set and fork.
	Header         json.RawMessage   `json:"header,omitempty"`
	Entries        []json.RawMessage `json:"entries,omitempty"`
	ExpectLastSeq  *uint64           `json:"expectLastSeq"`
	LeafID         wire.NullableID   `json:"leafId,omitzero"`
	ExpectRevision *uint64           `json:"expectRevision"`
	EntryID        string            `json:"entryId"`

	// data is the raw body of import (pi JSONL).
	data []byte
}

// leaf turns the leaf and client parameters into the engine's selector:
// an explicit leaf wins over the client's cursor.
func (r *request) leaf() service.Leaf {
	return service.Leaf{ID: r.Leaf.ID, Null: r.Leaf.Null, Client: r.Client}
}

// decodeJSON decodes a request body into r. An empty body is an empty
// object; unknown fields are ignored; everything else names what is wrong.
// Every JSON body goes through it: HTTP, NATS and forwarded requests.
func decodeJSON(data []byte, r *request) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	// Depth first: segmentio's decoder recurses once per level with no
	// bound (2 million '[' overflowed the stack, which kills the process,
	// and one million took 820 MB), in any field, known or not.
	if err := tree.CheckDepth(data); err != nil {
		return wire.Invalid("body", err.Error())
	}
	// segmentio's decoder first: the same rules, several times faster on
	// the entries' bytes every append carries (encoding/json was a fifth of
	// the node's CPU per append request). A body it refuses is decoded
	// again by encoding/json, whose errors say more (the byte offset of a
	// truncated body) and are the ones documented.
	if fastjson.Unmarshal(data, r) == nil {
		return nil
	}
	err := json.Unmarshal(data, r)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return wire.Invalid("body", fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se))
	case errors.As(err, &te) && te.Field == "":
		return wire.Invalid("body", "must be a JSON object")
	case errors.As(err, &te):
		return wire.Invalid(te.Field, fmt.Sprintf("must be %s, not %s", kindName(te.Type), te.Value))
	default:
		return wire.Invalid("body", err.Error())
	}
}

// kindName describes an expected JSON type for a message.
func kindName(t reflect.Type) string {
	if t == nil {
		return "a valid value"
	}
	if t == reflect.TypeFor[wire.NullableID]() {
		return "an entry id or null"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Uint64, reflect.Uint, reflect.Uint32:
		return "a non-negative integer"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Slice:
		return "an array"
	case reflect.Pointer:
		return kindName(t.Elem())
	}
	return "a " + t.Kind().String()
}

// applyQuery copies query parameters over r. A parameter that is present
// but malformed is an error naming it.
func applyQuery(q url.Values, r *request) error {
	uints := []struct {
		name string
		dst  *uint64
	}{{"minSeq", &r.MinSeq}, {"afterSeq", &r.AfterSeq}}
	for _, u := range uints {
		if v := q.Get(u.name); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return wire.Invalid(u.name, fmt.Sprintf("%q is not a non-negative integer", v))
			}
			*u.dst = n
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return wire.Invalid("limit", fmt.Sprintf("%q is not a positive integer", v))
		}
		r.Limit = n
	}
	if q.Has("leaf") {
		r.Leaf.Parse(q.Get("leaf"))
	}
	bools := []struct {
		name string
		dst  *bool
	}{{"strict", &r.Strict}, {"preview", &r.Preview}}
	for _, p := range bools {
		if q.Has(p.name) {
			b, err := parseBool(p.name, q.Get(p.name))
			if err != nil {
				return err
			}
			*p.dst = b
		}
	}
	strs := []struct {
		name string
		dst  *string
	}{{"client", &r.Client}, {"format", &r.Format}, {"cursor", &r.Cursor}, {"name", &r.Name}, {"cwd", &r.Cwd}, {"label", &r.Label}, {"since", &r.Since}, {"month", &r.Month}, {"olderThan", &r.Older}, {"consistency", &r.Consistency}, {"include", &r.Include}, {"form", &r.Form}}
	for _, p := range strs {
		if q.Has(p.name) {
			*p.dst = q.Get(p.name)
		}
	}
	return nil
}

// parseBool reads a boolean parameter: true or false (also 1 and 0).
func parseBool(name, v string) (bool, error) {
	switch v {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, wire.Invalid(name, fmt.Sprintf("%q: must be true or false", v))
}

// checkSession validates the session id of a per-session operation.
func (r *request) checkSession() error { return session.ValidSessionID(r.SessionID) }

// checkClient validates an optional client id (required when need).
func (r *request) checkClient(need bool) error {
	if r.Client == "" && !need {
		return nil
	}
	return session.ValidClientID(r.Client)
}

// llm reads the context format: "agent" (default) or "llm".
func (r *request) llm() (bool, error) {
	switch r.Format {
	case "", "agent":
		return false, nil
	case "llm":
		return true, nil
	}
	return false, wire.Invalid("format", fmt.Sprintf(`%q: must be "agent" or "llm"`, r.Format))
}

// maxPageLimit is the largest limit of list and archive.list: a page is
// one reply, which must fit a NATS message.
const maxPageLimit = 1000

// pageLimit checks the limit of a paged listing: 1–1000, or absent.
func (r *request) pageLimit() error {
	if r.Limit < 0 || r.Limit > maxPageLimit {
		return wire.Invalid("limit", fmt.Sprintf("%d: must be 1–%d (the page size; page on with cursor)", r.Limit, maxPageLimit))
	}
	return nil
}

// withEntries reads tree's include: "" or "entries".
func (r *request) withEntries() (bool, error) {
	switch r.Include {
	case "":
		return false, nil
	case wire.TreeIncludeEntries:
		return true, nil
	}
	return false, wire.Invalid("include", fmt.Sprintf(`%q: must be "entries" (pi's getTree() nodes) or absent`, r.Include))
}

// flat reads tree's form: "flat" or absent (nested).
func (r *request) flat() (bool, error) {
	switch r.Form {
	case "":
		return false, nil
	case wire.TreeFormFlat:
		return true, nil
	}
	return false, wire.Invalid("form", fmt.Sprintf(`%q: must be "flat" (the nodes as one list, children as ids) or absent (nested)`, r.Form))
}

// filter builds a list filter, validating limit and since.
func (r *request) filter() (store.ListFilter, error) {
	f := store.ListFilter{Name: r.Name, Cwd: r.Cwd, CwdPrefix: r.cwdPrefix, Label: r.Label, After: r.Cursor, Limit: r.Limit, Preview: r.Preview}
	if err := r.pageLimit(); err != nil {
		return f, err
	}
	if r.Since != "" {
		t, err := time.Parse(time.RFC3339Nano, r.Since)
		if err != nil {
			return f, wire.Invalid("since", fmt.Sprintf("%q is not an RFC 3339 time (like 2026-11-30T08:51:24Z)", r.Since))
		}
		f.Since = t
	}
	return f, nil
}
