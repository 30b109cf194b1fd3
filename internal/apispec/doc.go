// Package apispec holds docs/openapi.yaml to the API's traffic, for tests:
// Middleware validates every request an API test sends and every response
// it gets against the spec (a response header the spec does not declare
// for that response included) and records which reply properties came,
// so that Unobserved can name those the spec declares and no reply of a
// package's tests carried; and Schema compiles one of the spec's JSON
// Schemas so that a test can check values against it (the entry schemas
// against internal/tree's own validator, for one). It links
// libopenapi-validator, which no binary should carry, so only tests import
// it.
package apispec
