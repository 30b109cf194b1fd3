package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/pifleet/sessionlog/internal/service"
	"github.com/pifleet/sessionlog/internal/session"
	"github.com/pifleet/sessionlog/internal/store"
	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// decode builds an operation's typed request T (a wire.*Request) from
// what a transport received: the JSON body (an import's is the file
// itself), then the query and then the path, each overriding the fields of
// the same name before it: the path names the resource, so it wins. NATS
// and forwarded requests have a body only, where path and query parameters
// are plain fields. Unknown fields and parameters are ignored.
func decode[T any](body []byte, path func(string) string, q url.Values) (*T, error) {
	r := new(T)
	if ir, ok := any(r).(*wire.ImportRequest); ok {
		ir.File = body // its flags come in the query (HTTP) or headers (NATS)
	} else if err := decodeJSON(body, r); err != nil {
		return nil, err
	}
	v := reflect.ValueOf(r).Elem()
	if err := applyQuery(q, v); err != nil {
		return nil, err
	}
	if path != nil {
		for i := range v.NumField() {
			if w := v.Type().Field(i).Tag.Get("path"); w != "" && path(w) != "" {
				v.Field(i).SetString(path(w))
			}
		}
	}
	return r, nil
}

// decodeJSON decodes a request body into r. An empty body is an empty
// object; unknown fields are ignored; everything else names what is wrong.
// Every JSON body goes through it: HTTP, NATS and forwarded requests.
func decodeJSON(data []byte, r any) error {
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

// applyQuery copies the query parameters named as the JSON fields of the
// request v over them. A parameter that is present but malformed is an
// error naming it.
func applyQuery(q url.Values, v reflect.Value) error {
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || !q.Has(name) {
			continue
		}
		s, f := q.Get(name), v.Field(i)
		switch f.Addr().Interface().(type) {
		case *uint64: // minSeq, afterSeq
			if s == "" {
				continue
			}
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return wire.Invalid(name, fmt.Sprintf("%q is not a non-negative integer", s))
			}
			f.SetUint(n)
		case *int: // limit
			if s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return wire.Invalid(name, fmt.Sprintf("%q is not a positive integer", s))
			}
			f.SetInt(int64(n))
		case *wire.NullableID: // leaf
			f.Addr().Interface().(*wire.NullableID).Parse(s)
		case *bool: // strict, preview
			b, err := parseBool(name, s)
			if err != nil {
				return err
			}
			f.SetBool(b)
		case *string:
			f.SetString(s)
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

// leafOf turns the leaf and client parameters into the engine's selector:
// an explicit leaf wins over the client's cursor.
func leafOf(leaf wire.NullableID, client string) service.Leaf {
	return service.Leaf{ID: leaf.ID, Null: leaf.Null, Client: client}
}

// checkClient validates an optional client id (required when need).
func checkClient(client string, need bool) error {
	if client == "" && !need {
		return nil
	}
	return session.ValidClientID(client)
}

// checkCursorKey validates the session and client of a cursor operation.
func checkCursorKey(sid, client string) error {
	if err := session.ValidSessionID(sid); err != nil {
		return err
	}
	return checkClient(client, true)
}

// llmFormat reads the context format: "agent" (default) or "llm".
func llmFormat(format string) (bool, error) {
	switch format {
	case "", "agent":
		return false, nil
	case "llm":
		return true, nil
	}
	return false, wire.Invalid("format", fmt.Sprintf(`%q: must be "agent" or "llm"`, format))
}

// maxPageLimit is the largest limit of list and archive.list: a page is
// one reply, which must fit a NATS message.
const maxPageLimit = 1000

// pageLimit checks the limit of a paged listing: 1–1000, or absent.
func pageLimit(limit int) error {
	if limit < 0 || limit > maxPageLimit {
		return wire.Invalid("limit", fmt.Sprintf("%d: must be 1–%d (the page size; page on with cursor)", limit, maxPageLimit))
	}
	return nil
}

// includeEntries reads tree's include: "" or "entries".
func includeEntries(include string) (bool, error) {
	switch include {
	case "":
		return false, nil
	case wire.TreeIncludeEntries:
		return true, nil
	}
	return false, wire.Invalid("include", fmt.Sprintf(`%q: must be "entries" (pi's getTree() nodes) or absent`, include))
}

// flatForm reads tree's form: "flat" or absent (nested).
func flatForm(form string) (bool, error) {
	switch form {
	case "":
		return false, nil
	case wire.TreeFormFlat:
		return true, nil
	}
	return false, wire.Invalid("form", fmt.Sprintf(`%q: must be "flat" (the nodes as one list, children as ids) or absent (nested)`, form))
}

// filter builds a list filter, validating limit and since; cwdPrefix
// confines it to a tenant token's sessions (tenant.go).
func filter(r *wire.ListRequest, cwdPrefix string) (store.ListFilter, error) {
	f := store.ListFilter{Name: r.Name, Cwd: r.Cwd, CwdPrefix: cwdPrefix, Label: r.Label, ParentSession: r.ParentSession, After: r.Cursor, Limit: r.Limit, Preview: r.Preview}
	if err := pageLimit(r.Limit); err != nil {
		return f, err
	}
	if r.ParentSession != "" {
		if err := session.ValidSessionID(r.ParentSession); err != nil {
			return f, wire.Invalid("parentSession", "must be a session id")
		}
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
