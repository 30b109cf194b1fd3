package apispec

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	c, err := schemaCompiler(data)
	if err != nil {
		return nil, err
	}
	return &Spec{Model: &m.Model, val: v, compiler: c, schemas: map[string]*jsonschema.Schema{}}, nil
}

// resourceURL names the spec's components as one JSON Schema resource, so
// that their $refs ("#/components/schemas/X") resolve inside it.
const resourceURL = "https://pi-node.invalid/openapi.json"

// schemaCompiler loads the spec's components into a JSON Schema compiler:
// OpenAPI 3.1's schemas are JSON Schema 2020-12, so a value is checked
// against them by the same rules the validator applies to bodies.
func schemaCompiler(data []byte) (*jsonschema.Compiler, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var whole struct {
		Components json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(js, &whole); err != nil {
		return nil, err
	}
	res, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(`{"components":` + string(whole.Components) + `}`)))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(resourceURL, res); err != nil {
		return nil, err
	}
	return c, nil
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
	s.schemaMu.Lock()
	defer s.schemaMu.Unlock()
	if sch, ok := s.schemas[name]; ok {
		return sch, nil
	}
	sch, err := s.compiler.Compile(resourceURL + "#/components/schemas/" + name)
	if err != nil {
		return nil, err
	}
	s.schemas[name] = sch
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
