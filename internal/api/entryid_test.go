package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/apispec"
)

// TestWriteEntrySchemaAgrees: the spec accepts exactly the entry ids,
// parent ids and types that an append accepts, so a client that validates
// its requests with the spec is not refused by the server for what the
// spec allowed.
func TestWriteEntrySchemaAgrees(t *testing.T) {
	e := newEnv(t)
	s := apispec.Load(t)
	res := e.create(userMsg("root", "q"))
	path := "/v1/sessions/" + res.SessionID + "/entries"
	str := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	cases := []string{}
	for _, id := range []string{"6664c2e7", "A-z_09", strings.Repeat("a", 64), strings.Repeat("b", 65), "", "a b", "a.b", "a/b", "é", "a\nb", "a\"b"} {
		cases = append(cases, `{"type":"custom","customType":"c","parentId":null,"id":`+str(id)+`}`)
	}
	cases = append(cases,
		`{"type":"custom","customType":"c","id":7}`,
		`{"type":"custom","customType":"c","parentId":"root"}`,
		`{"type":"custom","customType":"c","parentId":""}`,
		`{"type":"custom","customType":"c","parentId":7}`,
		`{"type":"","id":"t1"}`,
		`{"type":"session","id":"t2"}`,
		`{"type":"label","targetId":"root","label":"x"}`,
		`{"type":"label","targetId":"","label":"x"}`,
	)
	for _, entry := range cases {
		body := `{"entries":[` + entry + `]}`
		specErr := s.ValidateJSON("AppendRequest", []byte(body))
		code, reply := e.do("POST", path, body)
		if (specErr == nil) != (code == 200) {
			t.Errorf("%s: the server answers %d %s; the spec says %v", entry, code, reply, orValid(specErr))
		}
	}
}

func orValid(err error) any {
	if err == nil {
		return "valid"
	}
	return fmt.Sprint(err)
}
