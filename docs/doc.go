// Package docs holds the documents that code needs at run time: the OpenAPI
// description of pi-node's HTTP API, which pi-node serves at
// /v1/openapi.yaml and the API tests validate their traffic against. It is a
// package of its own because go:embed cannot reach a parent directory, and
// the spec belongs next to the prose that it formalizes.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml, the OpenAPI 3.1 contract of the HTTP API.
//
//go:embed openapi.yaml
var OpenAPI []byte
