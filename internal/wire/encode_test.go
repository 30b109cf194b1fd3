package wire

import "testing"

// TestPointerRequests: a request given by pointer encodes as its value, and
// a NullableID made without EntryID or NullID counts as absent.
func TestPointerRequests(t *testing.T) {
	if _, err := EncodeHTTP(&GetRequest{SessionID: "s"}, 3); err != nil {
		t.Fatal(err)
	}
	if _, d, err := EncodeNATS(&GetRequest{SessionID: "s"}, 3); err != nil || string(d) != `{"sessionId":"s","minSeq":3}` {
		t.Fatal(string(d), err)
	}
	if _, d, err := EncodeNATS(&GetRequest{SessionID: "s"}, 0); err != nil || string(d) != `{"sessionId":"s"}` {
		t.Fatal(string(d), err)
	}
	h, err := EncodeHTTP(CursorSetRequest{SessionID: "s", Client: "c", LeafID: NullableID{ID: "x"}}, 0)
	if err != nil || string(h.Body) != `{}` {
		t.Fatalf("%s %v", h.Body, err)
	}
}
