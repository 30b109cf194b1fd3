package apispec

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
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
	"github.com/pifleet/sessionlog/internal/wire"
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
	res, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return nil, nil, err
	}
	doc, ok := res.(map[string]any)
	if !ok {
		return nil, nil, errors.New("not a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(resourceURL, res); err != nil {
		return nil, nil, err
	}
	return c, doc, nil
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

// ValidateNATSReply checks the body of a NATS reply to operation o with
// the given status (the micro error code, else o's success status) against
// the JSON schema the spec declares for that HTTP response: NATS replies
// carry the HTTP bodies. A reply over NATS max_payload is a 413 of any
// operation, which HTTP does not have, so a 413 is checked as an
// ErrorBody. A response declared without a JSON body (export's JSONL,
// cursor.delete's 204, whose NATS {} is not checked) passes; an undeclared
// status is an error.
func (s *Spec) ValidateNATSReply(o wire.Op, status int, body []byte) error {
	if status == http.StatusRequestEntityTooLarge {
		return s.ValidateJSON("ErrorBody", body)
	}
	ptr := "/paths/" + escapePointer(o.Path) + "/" + strings.ToLower(o.Method) + "/responses/" + strconv.Itoa(status)
	resp, _ := s.lookup(ptr).(map[string]any)
	if resp == nil {
		return fmt.Errorf("%s: no response %d in docs/openapi.yaml", o.Name, status)
	}
	if ref, _ := resp["$ref"].(string); ref != "" {
		ptr = strings.TrimPrefix(ref, "#")
	}
	ptr += "/content/application~1json/schema"
	if s.lookup(ptr) == nil {
		return nil
	}
	sch, err := s.schemaAt(ptr)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %d: not JSON: %w", o.Name, status, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("%s %d: %w", o.Name, status, err)
	}
	return nil
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
