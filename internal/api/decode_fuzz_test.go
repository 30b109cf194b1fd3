package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// FuzzDecode feeds arbitrary bodies to decodeJSON, the decoder of every
// JSON request (HTTP, NATS, forwarded), and each entry it accepts to the
// entry path (tree.ParseEntry and tree.CheckLine, what appends and the
// Store run). The seed corpus is testdata/fuzz/FuzzDecode. It checks:
//   - nothing panics or overflows the stack;
//   - a body nested deeper than tree.MaxDepth is refused with the depth
//     error, whatever else is wrong with it;
//   - otherwise decodeJSON agrees with encoding/json (the documented
//     rules; segmentio's decoder only runs first for speed), and an
//     accepted body round-trips: encoding what was decoded and decoding
//     that again gives the same request;
//   - the line scanner refuses at or before the offset CheckDepth names.
//
// In CI: go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 20s ./internal/api/
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"entries":[{"type":"message","message":{"role":"user","content":"hi","timestamp":1}}],"leaf":null}`))
	f.Add([]byte(`{"entries":[],"x":` + strings.Repeat("[", tree.MaxDepth+1) + "}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r request
		err := decodeJSON(data, &r)
		if err != nil && !errors.Is(err, wire.ErrInvalid) {
			t.Fatalf("error %v is not ErrInvalid", err)
		}
		checkLine(t, data)

		if de := tree.CheckDepth(data); de != nil {
			if err == nil || err.Error() != "body: "+de.Error() {
				t.Fatalf("deep body: %v, want %v", err, de)
			}
			return
		}
		var ref request
		refErr := json.Unmarshal(data, &ref)
		if len(bytes.TrimSpace(data)) == 0 {
			refErr = nil // an empty body is an empty object
		}
		if (err == nil) != (refErr == nil) {
			t.Fatalf("decodeJSON: %v; encoding/json: %v", err, refErr)
		}
		if err != nil {
			return
		}
		enc := mustEncode(t, &r)
		if want := mustEncode(t, &ref); !bytes.Equal(enc, want) {
			t.Fatalf("decoded as %s; encoding/json decodes %s", enc, want)
		}
		var again request
		if err := decodeJSON(enc, &again); err != nil {
			t.Fatalf("%s does not decode again: %v", enc, err)
		}
		if got := mustEncode(t, &again); !bytes.Equal(got, enc) {
			t.Fatalf("round trip: %s, then %s", enc, got)
		}
		for _, e := range r.Entries {
			checkLine(t, e)
		}
		if r.Header != nil {
			checkLine(t, r.Header)
		}
	})
}

// checkLine runs b through the entry path: a line CheckDepth refuses is
// refused there too, at or before that offset.
func checkLine(t *testing.T, b []byte) {
	_, perr := tree.ParseEntry(b)
	_ = tree.CheckLine(b)
	var de *tree.DepthError
	if !errors.As(tree.CheckDepth(b), &de) {
		return
	}
	var got *tree.DepthError
	switch {
	case perr == nil:
		t.Fatalf("ParseEntry accepts a line CheckDepth refuses: %v", de)
	case errors.As(perr, &got) && got.Offset != de.Offset:
		t.Fatalf("ParseEntry: %v; CheckDepth: %v", perr, de)
	}
}

func mustEncode(t *testing.T, r *request) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("encoding %+v: %v", r, err)
	}
	return b
}
