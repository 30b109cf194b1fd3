package tree

import "github.com/pifleet/sessionlog/internal/tree/jsjson"

// Value is a JSON value as pi's JSON.parse sees it: the form in which
// migrations rewrite lines, previews read entries and callers inspect what
// a session holds. It is jsjson.Value, named here so that users of the
// session model need not import the emulation; parse one with
// jsjson.ParseValue.
type Value = jsjson.Value

// Member is one property of an object Value.
type Member = jsjson.Member

// ValueKind is the kind of a Value. (It is not called Kind because that
// name is taken by the entry type in this package.)
type ValueKind = jsjson.Kind

// The kinds of Value. The zero Value is KindNull.
const (
	KindNull   = jsjson.KindNull
	KindBool   = jsjson.KindBool
	KindNumber = jsjson.KindNumber
	KindString = jsjson.KindString
	KindArray  = jsjson.KindArray
	KindObject = jsjson.KindObject
)
