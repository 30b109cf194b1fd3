// Package jsjson is JSON as JavaScript has it, for reproducing what pi
// (TypeScript, on node) reads and writes byte for byte. encoding/json
// differs in ways that matter: it replaces lone surrogates with U+FFFD,
// keeps the last duplicate key in its last position, escapes '<', '>',
// '&', U+2028 and U+2029, prints numbers differently and does not know
// JavaScript's property order.
//
// Strings are WTF-8 (string.go): UTF-8 that may also hold the lone
// surrogates a JavaScript string can contain, as pi's conformance vectors
// do. AppendString quotes like JSON.stringify, Unquote decodes a literal
// like JSON.parse, IsWhitespace and Trim are String.prototype.trim's.
//
// Values (value.go): ParseValue is JSON.parse, Value.AppendJSON is
// JSON.stringify, and Get, Set and Delete edit objects keeping JavaScript's
// property order (array-index keys first, then insertion order). Truthy and
// ToString are JavaScript's truthiness and String(x) of a raw JSON value.
//
// Numbers (number.go): FormatNumber is Number.prototype.toString, the
// spelling JSON.stringify uses. Dates (date.go): DateMillis is
// new Date(x).getTime() for a raw JSON value, with the ECMAScript date
// string format; ParseNumber reads a number literal as JSON.parse does.
//
// Like package tree, which it serves, it is pure: the standard library
// only, no I/O, no clock, no goroutines, no logging. It must not import
// tree.
package jsjson
