package apispec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/jsonschema/v6"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi/datamodel"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"sigs.k8s.io/yaml"

	"github.com/pifleet/sessionlog/docs"
)

// Spec is docs/openapi.yaml, parsed once per test binary.
type Spec struct {
	// Model is the document as libopenapi reads it.
	Model *v3.Document

	// mu serializes the validator: handlers of one test server run
	// concurrently, and it is cheaper to wait than to trust every cache
	// of the library to be safe for that.
	mu  sync.Mutex
	val validator.Validator

	schemaMu sync.Mutex
	schemas  map[string]*jsonschema.Schema
	compiler *jsonschema.Compiler
	// doc is the spec as JSON, for the pointers of ValidateReply.
	doc map[string]any
}

var (
	loadOnce sync.Once
	loaded   *Spec
	loadErr  error
)

// Load returns the spec, failing t if it does not parse or is not a valid
// OpenAPI document.
func Load(t testing.TB) *Spec {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = load(docs.OpenAPI) })
	if loadErr != nil {
		t.Fatalf("docs/openapi.yaml: %v", loadErr)
	}
	return loaded
}

func load(data []byte) (*Spec, error) {
	// The tree nodes are recursive through their children arrays, which
	// libopenapi calls circular unless told that arrays may end the
	// recursion (an empty children array does).
	doc, err := libopenapi.NewDocumentWithConfiguration(data, &datamodel.DocumentConfiguration{
		IgnoreArrayCircularReferences:       true,
		IgnorePolymorphicCircularReferences: true,
	})
	if err != nil {
		return nil, err
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, err
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("not a valid OpenAPI document: %s", describe(verrs))
	}
	c, js, err := schemaCompiler(data)
	if err != nil {
		return nil, err
	}
	return &Spec{Model: &m.Model, val: v, compiler: c, schemas: map[string]*jsonschema.Schema{}, doc: js}, nil
}

// resourceURL names the spec as one JSON Schema resource, so that its
// $refs ("#/components/schemas/X") resolve inside it.
const resourceURL = "https://pi-node.invalid/openapi.json"

// schemaCompiler loads the spec into a JSON Schema compiler: OpenAPI 3.1's
// schemas are JSON Schema 2020-12, so a value is checked against them by
// the same rules the validator applies to bodies. It also returns the spec
// as JSON.
func schemaCompiler(data []byte) (*jsonschema.Compiler, map[string]any, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, nil, err
	}
	res, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return nil, nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(resourceURL, res); err != nil {
		return nil, nil, err
	}
	return c, doc, nil
}

// Schema returns the compiled components/schemas/name, failing t if the
// spec has no such schema.
func (s *Spec) Schema(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	sch, err := s.schema(name)
	if err != nil {
		t.Fatalf("docs/openapi.yaml: schema %s: %v", name, err)
	}
	return sch
}

func (s *Spec) schema(name string) (*jsonschema.Schema, error) {
	return s.schemaAt("/components/schemas/" + name)
}

// schemaAt compiles the schema at JSON pointer ptr of the spec.
func (s *Spec) schemaAt(ptr string) (*jsonschema.Schema, error) {
	s.schemaMu.Lock()
	defer s.schemaMu.Unlock()
	if sch, ok := s.schemas[ptr]; ok {
		return sch, nil
	}
	sch, err := s.compiler.Compile(resourceURL + "#" + ptr)
	if err != nil {
		return nil, err
	}
	s.schemas[ptr] = sch
	return sch, nil
}

// ValidateJSON checks the JSON document data against schema name: nil when
// it holds.
func (s *Spec) ValidateJSON(name string, data []byte) error {
	sch, err := s.schema(name)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return sch.Validate(v)
}

// ValidateReply checks a reply body of operation op (its operationId, a
// wire op's name) with the given status against the JSON schema the spec
// declares for that response: what NATS replies carry, the same bodies as
// HTTP's. A response the spec declares without a JSON body (export's
// JSONL, cursor.delete's 204) is not checked; an undeclared status is an
// error.
func (s *Spec) ValidateReply(op string, status int, body []byte) error {
	path, method, ok := s.operationPath(op)
	if !ok {
		return fmt.Errorf("no operation %q in docs/openapi.yaml", op)
	}
	base := "/paths/" + escapePointer(path) + "/" + method + "/responses/"
	code := strconv.Itoa(status)
	resp, _ := s.lookup(base + code).(map[string]any)
	if resp == nil {
		return fmt.Errorf("%s: no response %d in docs/openapi.yaml", op, status)
	}
	ptr := base + code
	if ref, _ := resp["$ref"].(string); ref != "" {
		ptr = strings.TrimPrefix(ref, "#")
	}
	if s.lookup(ptr+"/content/application~1json/schema") == nil {
		return nil
	}
	sch, err := s.schemaAt(ptr + "/content/application~1json/schema")
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %d: not JSON: %w", op, status, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("%s %d: %w", op, status, err)
	}
	return nil
}

// operationPath finds the path and method of operationId op.
func (s *Spec) operationPath(op string) (path, method string, ok bool) {
	paths, _ := s.doc["paths"].(map[string]any)
	for p, item := range paths {
		ops, _ := item.(map[string]any)
		for m, o := range ops {
			if oo, _ := o.(map[string]any); oo != nil && oo["operationId"] == op {
				return p, m, true
			}
		}
	}
	return "", "", false
}

// lookup follows JSON pointer ptr in the spec (nil when nothing is there).
func (s *Spec) lookup(ptr string) any {
	var cur any = s.doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		cur = m[tok]
	}
	return cur
}

// escapePointer escapes one JSON pointer token.
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// describe joins validation errors into one line each, with the schema
// failures that explain them.
func describe[E interface{ Error() string }](errs []E) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("\n\t")
		b.WriteString(e.Error())
	}
	return b.String()
}
