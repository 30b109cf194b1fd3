package apispec

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi-validator/paths"
)

// The properties of a response body that the spec declares and the server
// never sends mislead a client as much as the ones it sends undeclared. A
// test can only see what a run sent, so Middleware records the properties
// of every successful JSON reply it validated — the top level, and the
// objects of top-level arrays (`sessions[].firstMessage`) — and
// Unobserved, at the end of a package's tests, names the declared ones no
// reply carried.

// observed is what the replies of one response (an operation's status)
// carried.
type observed struct {
	ptr   string          // JSON pointer of the response in the spec
	props map[string]bool // property paths seen
}

var (
	obsMu sync.Mutex
	obs   = map[string]*observed{} // "GET /v1/sessions/{id} 200" → what its replies carried
)

// observe records the properties of body, a reply with status to r that
// the spec accepted.
func (s *Spec) observe(r *http.Request, status int, body []byte) {
	if status < 200 || status > 299 {
		return
	}
	var top map[string]any
	if json.Unmarshal(body, &top) != nil {
		return
	}
	s.mu.Lock()
	_, _, tmpl := paths.FindPath(r, s.Model, nil)
	s.mu.Unlock()
	if tmpl == "" {
		return
	}
	key := r.Method + " " + tmpl + " " + strconv.Itoa(status)
	obsMu.Lock()
	defer obsMu.Unlock()
	o := obs[key]
	if o == nil {
		o = &observed{ptr: "/paths/" + escapePointer(tmpl) + "/" + strings.ToLower(r.Method) + "/responses/" + strconv.Itoa(status), props: map[string]bool{}}
		obs[key] = o
	}
	for k, v := range top {
		o.props[k] = true
		if arr, ok := v.([]any); ok {
			for _, el := range arr {
				if m, ok := el.(map[string]any); ok {
					for sub := range m {
						o.props[k+"[]."+sub] = true
					}
				}
			}
		}
	}
}

// Unobserved lists, for every response the tests of this binary got at
// least once through Middleware or Transport, the properties its schema
// declares that none of its replies carried:
// "GET /v1/sessions/{id} 200: firstMessage". Call it from TestMain after
// the whole package ran.
func Unobserved() []string {
	if loaded == nil {
		return nil
	}
	return loaded.unobserved()
}

func (s *Spec) unobserved() []string {
	obsMu.Lock()
	defer obsMu.Unlock()
	var out []string
	for key, o := range obs {
		for _, p := range s.declared(o.ptr) {
			if !o.props[p] {
				out = append(out, fmt.Sprintf("%s: %s", key, p))
			}
		}
	}
	slices.Sort(out)
	return out
}

// declared are the property paths of the JSON body of the response at ptr:
// its top-level properties, and those of the objects of its top-level
// arrays.
func (s *Spec) declared(ptr string) []string {
	resp, _ := s.resolve(s.lookup(ptr)).(map[string]any)
	sch := s.lookup(refOr(resp, ptr) + "/content/application~1json/schema")
	var out []string
	for name, p := range s.properties(sch) {
		out = append(out, name)
		items, _ := s.resolve(p).(map[string]any)
		for sub := range s.properties(items["items"]) {
			out = append(out, name+"[]."+sub)
		}
	}
	return out
}

// refOr is the pointer m's $ref names, else ptr.
func refOr(m map[string]any, ptr string) string {
	if ref, _ := m["$ref"].(string); ref != "" {
		return strings.TrimPrefix(ref, "#")
	}
	return ptr
}

// resolve follows v's $ref, if any, within the spec.
func (s *Spec) resolve(v any) any {
	for {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, _ := m["$ref"].(string)
		if ref == "" {
			return v
		}
		v = s.lookup(strings.TrimPrefix(ref, "#"))
	}
}

// properties are a schema's properties, through $ref and allOf (oneOf and
// conditionals pick among shapes, so none of theirs is owed).
func (s *Spec) properties(v any) map[string]any {
	out := map[string]any{}
	m, _ := s.resolve(v).(map[string]any)
	if m == nil {
		return out
	}
	props, _ := m["properties"].(map[string]any)
	for k, p := range props {
		out[k] = p
	}
	all, _ := m["allOf"].([]any)
	for _, sub := range all {
		for k, p := range s.properties(sub) {
			out[k] = p
		}
	}
	return out
}
