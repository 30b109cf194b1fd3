package apispec_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/pifleet/sessionlog/internal/apispec"
	"github.com/pifleet/sessionlog/internal/wire"
)

// notOps are the spec's operations outside wire's table: the probes, and
// the document itself (internal/api's OpenAPIRoute).
var notOps = append(slices.Clone(wire.Probes), "GET /v1/openapi.yaml")

// operation returns the spec's operation at method and path, or nil.
func operation(m *v3.Document, method, path string) *v3.Operation {
	pi := m.Paths.PathItems.GetOrZero(path)
	if pi == nil {
		return nil
	}
	return pi.GetOperations().GetOrZero(strings.ToLower(method))
}

// TestSpecHasEveryOp: each operation of wire.Ops is in the spec at its
// method and path, named by its operationId, with its success status and
// scope, and the spec has no operation the table lacks.
func TestSpecHasEveryOp(t *testing.T) {
	m := apispec.Load(t).Model
	inTable := map[string]bool{}
	for _, o := range wire.Ops {
		inTable[o.Route()] = true
		op := operation(m, o.Method, o.Path)
		if op == nil {
			t.Errorf("%s: no operation %s in docs/openapi.yaml", o.Name, o.Route())
			continue
		}
		if op.OperationId != o.Name {
			t.Errorf("%s: operationId %q, want %q", o.Route(), op.OperationId, o.Name)
		}
		if op.Responses == nil || op.Responses.Codes.GetOrZero(strconv.Itoa(o.Status)) == nil {
			t.Errorf("%s: no %d response", o.Route(), o.Status)
		}
		if scope := extension(op, "x-scope"); scope != o.Scope() {
			t.Errorf("%s: x-scope %q, want %q", o.Route(), scope, o.Scope())
		}
		if subj := extension(op, "x-nats-subject"); !o.HTTPOnly() && subj != o.Subject {
			t.Errorf("%s: x-nats-subject %q, want %q", o.Route(), subj, o.Subject)
		}
	}
	for path, pi := range m.Paths.PathItems.FromOldest() {
		for method := range pi.GetOperations().FromOldest() {
			route := strings.ToUpper(method) + " " + path
			// OPTIONS is the CORS preflight of every /v1 path (internal/api/cors.go).
			if inTable[route] || slices.Contains(notOps, route) || method == "options" {
				continue
			}
			t.Errorf("docs/openapi.yaml has %s, which no operation of wire.Ops serves", route)
		}
	}
}

func extension(op *v3.Operation, key string) string {
	if n := op.Extensions.GetOrZero(key); n != nil {
		return n.Value
	}
	return ""
}

// TestSpecHasEveryField: every field of every request type is a parameter
// of its operation (the path's wildcards for path-tagged fields) or a
// property of its JSON body.
func TestSpecHasEveryField(t *testing.T) {
	m := apispec.Load(t).Model
	for _, req := range wire.Requests() {
		o := req.Op()
		op := operation(m, o.Method, o.Path)
		if op == nil {
			continue // TestSpecHasEveryOp reports it
		}
		params := map[string]string{} // name → in
		for _, p := range append(slices.Clone(m.Paths.PathItems.GetOrZero(o.Path).Parameters), op.Parameters...) {
			params[p.Name] = p.In
		}
		props := bodyProperties(op)
		rt := reflect.TypeOf(req)
		for i := range rt.NumField() {
			f := rt.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue // the body itself (import's file)
			}
			if w := f.Tag.Get("path"); w != "" && strings.Contains(o.Path, "{"+w+"}") {
				if params[w] != "path" {
					t.Errorf("%s: field %s fills {%s}, which is no path parameter of %s", o.Name, f.Name, w, o.Route())
				}
				continue
			}
			_, inQuery := params[name]
			if !inQuery && !props[name] {
				t.Errorf("%s: field %q is neither a parameter nor a body property of %s", o.Name, name, o.Route())
			}
			if o.Body == wire.JSONBody && !props[name] {
				t.Errorf("%s: field %q goes in the JSON body, which does not declare it", o.Name, name)
			}
		}
	}
}

// bodyProperties are the properties of an operation's JSON body, through
// allOf.
func bodyProperties(op *v3.Operation) map[string]bool {
	out := map[string]bool{}
	if op.RequestBody == nil {
		return out
	}
	mt := op.RequestBody.Content.GetOrZero("application/json")
	if mt == nil || mt.Schema == nil {
		return out
	}
	var walk func(*base.Schema)
	walk = func(s *base.Schema) {
		if s == nil {
			return
		}
		for name := range s.Properties.KeysFromOldest() {
			out[name] = true
		}
		for _, sp := range s.AllOf {
			walk(sp.Schema())
		}
	}
	walk(mt.Schema.Schema())
	return out
}

// TestSpecHasEveryErrorCode: the error schema's code enum is exactly the
// Code constants of internal/wire/errors.go.
func TestSpecHasEveryErrorCode(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../wire/errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for i, id := range vs.Names {
				if strings.HasPrefix(id.Name, "Code") && i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						codes = append(codes, s)
					}
				}
			}
		}
		return true
	})
	if len(codes) == 0 {
		t.Fatal("no Code constants found in internal/wire/errors.go")
	}
	detail := apispec.Load(t).Model.Components.Schemas.GetOrZero("ErrorDetail").Schema()
	var enum []string
	for _, n := range detail.Properties.GetOrZero("code").Schema().Enum {
		enum = append(enum, n.Value)
	}
	for _, c := range codes {
		if !slices.Contains(enum, c) {
			t.Errorf("error code %q (internal/wire/errors.go) is not in ErrorDetail.code's enum", c)
		}
	}
	for _, c := range enum {
		if !slices.Contains(codes, c) {
			t.Errorf("ErrorDetail.code's enum has %q, which internal/wire/errors.go does not define", c)
		}
	}
}

// TestSpecErrorStatuses: every /v1 operation declares the statuses every
// request may get (docs/API.md, Errors), each with the error body.
func TestSpecErrorStatuses(t *testing.T) {
	m := apispec.Load(t).Model
	for _, o := range wire.Ops {
		op := operation(m, o.Method, o.Path)
		if op == nil {
			continue
		}
		want := []int{400, 401, 403, 404, 500, 503, 504}
		if o.Body != wire.NoBody {
			want = append(want, http.StatusRequestEntityTooLarge)
		}
		for _, st := range want {
			r := op.Responses.Codes.GetOrZero(strconv.Itoa(st))
			if r == nil {
				t.Errorf("%s: no %d response", o.Route(), st)
				continue
			}
			mt := r.Content.GetOrZero("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.GetReference() != "#/components/schemas/ErrorBody" {
				t.Errorf("%s: the %d response is not an ErrorBody", o.Route(), st)
			}
		}
	}
}
