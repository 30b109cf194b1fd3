package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/tree"
	"github.com/pifleet/sessionlog/internal/wire"
)

// FuzzDecode feeds arbitrary bodies to the decode of every operation with
// a JSON body or none (HTTP, NATS, forwarded: decodeJSON decodes them all),
// and each entry create accepts to the entry path (tree.ParseEntry and
// tree.CheckLine, what appends and the Store run). The seed corpus is
// testdata/fuzz/FuzzDecode. It checks:
//   - nothing panics or overflows the stack;
//   - a body nested deeper than tree.MaxDepth is refused with the depth
//     error, whatever else is wrong with it;
//   - otherwise decode agrees with encoding/json (the documented rules;
//     segmentio's decoder only runs first for speed), and an accepted body
//     round-trips: encoding what was decoded and decoding that again gives
//     the same request;
//   - the line scanner refuses at or before the offset CheckDepth names.
//
// In CI: go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 20s ./internal/api/
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"entries":[{"type":"message","message":{"role":"user","content":"hi","timestamp":1}}],"leaf":null}`))
	f.Add([]byte(`{"entries":[],"x":` + strings.Repeat("[", tree.MaxDepth+1) + "}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLine(t, data)
		for i := range ops {
			if ops[i].Body != wire.JSONLBody { // import's body is a file
				fuzzDecode(t, &ops[i], data)
			}
		}
	})
}

// fuzzDecode checks o's decode of data as FuzzDecode says.
func fuzzDecode(t *testing.T, o *op, data []byte) {
	r, err := o.decode(data, nil, nil)
	if err != nil && !errors.Is(err, wire.ErrInvalid) {
		t.Fatalf("%s: error %v is not ErrInvalid", o.Name, err)
	}
	if de := tree.CheckDepth(data); de != nil {
		if err == nil || err.Error() != "body: "+de.Error() {
			t.Fatalf("%s: deep body: %v, want %v", o.Name, err, de)
		}
		return
	}
	zero, _ := o.decode(nil, nil, nil)
	ref := reflect.New(reflect.TypeOf(zero).Elem()).Interface()
	refErr := json.Unmarshal(data, ref)
	if len(bytes.TrimSpace(data)) == 0 {
		refErr = nil // an empty body is an empty object
	}
	if (err == nil) != (refErr == nil) {
		t.Fatalf("%s: decode: %v; encoding/json: %v", o.Name, err, refErr)
	}
	if err != nil {
		return
	}
	enc := mustEncode(t, r)
	if want := mustEncode(t, ref); !bytes.Equal(enc, want) {
		t.Fatalf("%s: decoded as %s; encoding/json decodes %s", o.Name, enc, want)
	}
	again, err := o.decode(enc, nil, nil)
	if err != nil {
		t.Fatalf("%s: %s does not decode again: %v", o.Name, enc, err)
	}
	if got := mustEncode(t, again); !bytes.Equal(got, enc) {
		t.Fatalf("%s: round trip: %s, then %s", o.Name, enc, got)
	}
	if c, ok := r.(*wire.CreateRequest); ok {
		for _, e := range c.Entries {
			checkLine(t, e)
		}
		if c.Header != nil {
			checkLine(t, c.Header)
		}
	}
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

func mustEncode(t *testing.T, r any) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("encoding %+v: %v", r, err)
	}
	return b
}
