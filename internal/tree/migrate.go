package tree

import (
	"fmt"
	"math"

	"github.com/pifleet/sessionlog/internal/tree/jsjson"
)

// migrate rewrites the lines of a version-1 or version-2 file to version 3
// exactly as pi's migrateToCurrentVersion + _rewriteFile do: the objects are
// mutated in place (new keys go after the existing ones, existing keys keep
// their position) and every line is serialized again with JSON.stringify's
// rules. Only JSON objects take part; other JSON values are left for Read to
// report.
func migrate(lines []parsedLine, version int, ids IDGen) error {
	vals := make([]Value, len(lines))
	for k := range lines {
		v, err := jsjson.ParseValue(lines[k].data)
		if err != nil {
			return &LineError{Line: lines[k].no, Reason: err.Error()}
		}
		vals[k] = v
	}
	if version < 2 {
		migrateV1(vals, ids)
	}
	for k := range vals {
		v := &vals[k]
		if v.Kind != KindObject {
			continue
		}
		if isType(v, "session") {
			v.Set("version", Value{Kind: KindNumber, Num: 3})
			continue
		}
		if isType(v, "message") {
			if m, ok := v.Get("message"); ok && m.Kind == KindObject {
				if r, ok := m.Get("role"); ok && r.Kind == KindString && r.Str == "hookMessage" {
					m.Set("role", Value{Kind: KindString, Str: "custom"})
				}
			}
		}
	}
	for k := range lines {
		if !lines[k].obj {
			continue
		}
		data := vals[k].AppendJSON(nil)
		lf, err := scanLine(data)
		if err != nil { // cannot happen: AppendJSON writes valid JSON
			return &LineError{Line: lines[k].no, Reason: fmt.Sprintf("migrated line does not parse: %v", err)}
		}
		lines[k].data, lines[k].lf = data, lf
	}
	return nil
}

// migrateV1 gives every entry a fresh id and its predecessor as parent, and
// turns a compaction's firstKeptEntryIndex (an index into the parsed lines,
// header included) into firstKeptEntryId.
func migrateV1(vals []Value, ids IDGen) {
	used := make(map[string]bool)
	var prev *Value // nil: parentId null
	for k := range vals {
		v := &vals[k]
		if v.Kind != KindObject {
			continue
		}
		if isType(v, "session") {
			v.Set("version", Value{Kind: KindNumber, Num: 2})
			continue
		}
		id := ids.New(func(s string) bool { return used[s] })
		used[id] = true
		v.Set("id", Value{Kind: KindString, Str: id})
		if prev == nil {
			v.Set("parentId", Value{Kind: KindNull})
		} else {
			v.Set("parentId", *prev)
		}
		prev = &Value{Kind: KindString, Str: id}

		if !isType(v, "compaction") {
			continue
		}
		fk, ok := v.Get("firstKeptEntryIndex")
		if !ok || fk.Kind != KindNumber {
			continue
		}
		var target *Value
		if n := fk.Num; n >= 0 && n == math.Trunc(n) && n < float64(len(vals)) {
			target = &vals[int(n)]
		}
		// pi: the target supplies its id as it is at this moment, so an
		// entry later in the file (no id yet) supplies undefined, which
		// JSON.stringify drops. The header or an index out of range assigns nothing.
		if target != nil && target.Kind == KindObject && !isType(target, "session") {
			if tid, ok := target.Get("id"); ok {
				v.Set("firstKeptEntryId", *tid)
			} else {
				v.Delete("firstKeptEntryId")
			}
		}
		v.Delete("firstKeptEntryIndex")
	}
}

func isType(v *Value, t string) bool {
	tv, ok := v.Get("type")
	return ok && tv.Kind == KindString && tv.Str == t
}
