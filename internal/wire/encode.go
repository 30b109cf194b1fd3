package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
)

// ContentType values of request and reply bodies.
const (
	ContentTypeJSON  = "application/json"
	ContentTypeJSONL = "application/x-ndjson"
)

// HTTPRequest is a request laid out for HTTP: EncodeHTTP's result.
type HTTPRequest struct {
	Method string
	// Path is escaped, with the wildcards filled; Query holds the fields of
	// a GET, DELETE or import.
	Path        string
	Query       url.Values
	Body        []byte // nil without a body
	ContentType string
}

// EncodeHTTP lays req out for HTTP. minSeq is a floor for the request's
// MinSeq (a client's configured read-your-writes sequence): a request may
// ask for a later one, never for an earlier one.
func EncodeHTTP(req Request, minSeq uint64) (HTTPRequest, error) {
	o := req.Op()
	out := HTTPRequest{Method: o.Method, Path: o.Path}
	// The path's fields leave the copy, so that neither the body nor the
	// query carries them again.
	v := reflect.Indirect(reflect.ValueOf(withMinSeq(req, minSeq)))
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	for i, wildcard := range pathFields(c.Type()) {
		if !strings.Contains(o.Path, "{"+wildcard+"}") {
			continue // a tag on a path this operation does not have
		}
		f := c.Field(i)
		out.Path = strings.Replace(out.Path, "{"+wildcard+"}", url.PathEscape(f.String()), 1)
		f.SetString("")
	}
	rest := c.Interface().(Request)
	if !o.bodyInQuery() {
		// One encoding of the struct: an append's entries are most of the
		// bytes.
		body, err := EncodeJSON(rest)
		if err != nil {
			return HTTPRequest{}, fmt.Errorf("%s request: %w", o.Name, err)
		}
		out.Body, out.ContentType = body, ContentTypeJSON
		return out, nil
	}
	fields, err := fieldsOf(rest)
	if err != nil {
		return HTTPRequest{}, err
	}
	out.Query = url.Values{}
	for k, v := range fields {
		out.Query.Set(k, queryValue(v))
	}
	if ir, ok := req.(ImportRequest); ok {
		out.Body, out.ContentType = ir.File, ContentTypeJSONL
	}
	return out, nil
}

// HeaderStrict is the NATS header of a strict import ("true"): the request
// body is the file, so the flag travels beside it.
const HeaderStrict = "Pi-Strict"

// NATSHeader returns the NATS headers req carries besides its body: an
// import's Strict flag; nil for every other request.
func NATSHeader(req Request) map[string][]string {
	if ir, ok := req.(ImportRequest); ok && ir.Strict {
		return map[string][]string{HeaderStrict: {"true"}}
	}
	return nil
}

// EncodeNATS lays req out for NATS: its subject and body (every field as
// JSON, or an import's file as it is, its flags in NATSHeader); minSeq as
// for EncodeHTTP.
func EncodeNATS(req Request, minSeq uint64) (subject string, data []byte, err error) {
	o := req.Op()
	if o.HTTPOnly() {
		return "", nil, fmt.Errorf("operation %s is served over HTTP only", o.Name)
	}
	if ir, ok := req.(ImportRequest); ok {
		return o.Subject, ir.File, nil
	}
	// One encoding of the struct itself: an append's entries are most of
	// the bytes, and going through Fields would scan and copy them twice
	// more on every request.
	data, err = EncodeJSON(withMinSeq(req, minSeq))
	if err != nil {
		return "", nil, fmt.Errorf("%s request: %w", o.Name, err)
	}
	return o.Subject, data, nil
}

// WithConsistency returns req with Consistency c when req reads the log
// (Op.LogRead) and asks for none itself: a client's configured default.
func WithConsistency(req Request, c string) Request {
	if c == "" || !req.Op().LogRead() {
		return req
	}
	v := reflect.Indirect(reflect.ValueOf(req))
	if f := v.FieldByName("Consistency"); !f.IsValid() || f.String() != "" {
		return req
	}
	cp := reflect.New(v.Type()).Elem()
	cp.Set(v)
	cp.FieldByName("Consistency").SetString(c)
	return cp.Interface().(Request)
}

// withMinSeq returns req with its MinSeq raised to at least minSeq.
func withMinSeq(req Request, minSeq uint64) any {
	v := reflect.Indirect(reflect.ValueOf(req)) // &GetRequest{} too
	if f := v.FieldByName("MinSeq"); !f.IsValid() || f.Uint() >= minSeq {
		return req
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	c.FieldByName("MinSeq").SetUint(minSeq)
	return c.Interface()
}

// fieldsOf returns req's fields by JSON name, as they are encoded (fields
// left empty are absent).
func fieldsOf(req Request) (map[string]json.RawMessage, error) {
	b, err := EncodeJSON(req)
	if err != nil {
		return nil, fmt.Errorf("%s request: %w", req.Op().Name, err)
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("%s request: %w", req.Op().Name, err)
	}
	return fields, nil
}

// pathFields maps the index of each of t's fields tagged path:"w" to w.
func pathFields(t reflect.Type) map[int]string {
	out := map[int]string{}
	for i := range t.NumField() {
		if w := t.Field(i).Tag.Get("path"); w != "" {
			out[i] = w
		}
	}
	return out
}

// queryValue writes a field's JSON value as a query parameter: a string
// unquoted, null as "null" (pi-node reads ?leaf=null), numbers as they are.
func queryValue(v json.RawMessage) string {
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// EncodeJSON encodes v without HTML escaping, so entries, labels and names
// reach the log with the bytes they were given ("<" stays "<", as pi writes
// it). json.RawMessage values are compacted, nothing else.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
