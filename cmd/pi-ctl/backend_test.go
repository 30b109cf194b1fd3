package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestParseArgsVariadic covers the optional and repeated last argument.
func TestParseArgsVariadic(t *testing.T) {
	e := &env{stdout: io.Discard}
	for _, c := range []struct {
		names []string
		args  []string
		want  string // joined positionals, or the error
	}{
		{[]string{"PATH..."}, []string{"a", "b", "c"}, "a b c"},
		{[]string{"PATH..."}, nil, "x: missing PATH (see 'x --help')"},
		{[]string{"SID", "[TEXT]"}, []string{"s"}, "s"},
		{[]string{"SID", "[TEXT]"}, []string{"s", "t"}, "s t"},
		{[]string{"SID", "[TEXT]"}, []string{"s", "t", "u"}, `x: unexpected argument "u" (see 'x --help')`},
		{nil, []string{"s"}, `x: unexpected argument "s" (see 'x --help')`},
	} {
		pos, err := parseArgs(e, newFlags("x"), "", c.args, c.names...)
		got := strings.Join(pos, " ")
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%v %v: %q, want %q", c.names, c.args, got, c.want)
		}
	}
}

// TestTable aligns columns by terminal width, wide characters included.
func TestTable(t *testing.T) {
	var b strings.Builder
	tb := &table{}
	tb.row("ID", "NAME", "N")
	tb.row("a", "名字", "1")
	tb.row("bb", "x", "22")
	if err := tb.write(&b); err != nil {
		t.Fatal(err)
	}
	if want := "ID  NAME  N\na   名字  1\nbb  x     22\n"; b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestFormatHelpers(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"24h":                  "2026-11-29T12:00:00Z",
		"2026-01-02T03:04:05Z": "2026-01-02T03:04:05Z",
		"-1h":                  "error",
		"yesterday":            "error",
	} {
		got, err := parseSince(in, now)
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("parseSince(%q) = %q, want %q", in, got, want)
		}
	}
}

// fakeClient answers every request with err.
type fakeClient struct{ err error }

func (f fakeClient) Do(context.Context, wire.Request) ([]byte, error) {
	return nil, f.err
}

func (fakeClient) Close() {}

// TestHints: the transports' advice becomes pi-ctl's, in terms of its
// flags; errors without advice keep none, and the sentinels survive.
func TestHints(t *testing.T) {
	silent := &apiclient.UnreachableError{Where: "http://h", Err: errors.New("the watch stream said nothing for 1m0s")}
	for _, c := range []struct {
		b    *apiBackend
		err  error
		want string
	}{
		{&apiBackend{}, &apiclient.UnreachableError{Where: "http://h", Err: errors.New("connection refused"), Hint: "is pi-node running at this URL?"},
			"cannot reach pi-node at http://h: connection refused (is pi-node running? point --http or $PI_CTL_HTTP at its HTTP listener)"},
		{&apiBackend{nats: true}, &apiclient.UnreachableError{Where: "nats://h", Err: errors.New("no reply"), Timeout: true},
			"cannot reach pi-node at nats://h: no reply (raise --timeout if the node is busy)"},
		{&apiBackend{}, silent, silent.Error()},
		{&apiBackend{}, &apiclient.Error{Status: 401, ErrorDetail: wire.ErrorDetail{Message: "a valid bearer token is required"}, Hint: "x"},
			"a valid bearer token is required (pass a token of the node's --http-token or --http-tokens with --token or $PI_CTL_TOKEN)"},
		{&apiBackend{hasToken: true}, &apiclient.Error{Status: 401, ErrorDetail: wire.ErrorDetail{Message: "m"}}, "m (the token given with --token or $PI_CTL_TOKEN is not one the node knows)"},
		{&apiBackend{hasToken: true}, &apiclient.Error{Status: 403, ErrorDetail: wire.ErrorDetail{Message: "m"}}, "m (use a token with that scope: see pi-node's --http-tokens file)"},
		{&apiBackend{nats: true}, &apiclient.Error{Status: 413, ErrorDetail: wire.ErrorDetail{Message: "m"}, Local: true}, "m (use --http URL: pi-node takes imports of up to 16 MiB over HTTP)"},
		{&apiBackend{nats: true}, &apiclient.Error{Status: 413, ErrorDetail: wire.ErrorDetail{Message: "m"}, Hint: "x"}, "m (pi-ctl: retry with --http URL)"},
		{&apiBackend{}, &apiclient.Error{Status: 404, ErrorDetail: wire.ErrorDetail{Message: "session x: not found"}}, "session x: not found"},
	} {
		c.b.c = fakeClient{c.err}
		_, err := c.b.do(context.Background(), wire.GetRequest{})
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: got %v, want %s", c.err, err, c.want)
		}
		var ue *apiclient.UnreachableError
		if errors.As(c.err, &ue) && !apiclient.Temporary(err) {
			t.Errorf("%v is no longer temporary", err)
		}
		if isStatus(c.err, http.StatusNotFound) != isStatus(err, http.StatusNotFound) {
			t.Errorf("%v: status lost", err)
		}
	}
	if !strings.Contains(silent.Error(), "said nothing") || silent.Hint != "" {
		t.Error("hint changed the transport's error in place")
	}
}
