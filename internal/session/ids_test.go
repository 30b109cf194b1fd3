package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/wire"
)

func TestValidSessionIDCase(t *testing.T) {
	const id = "01a22bdc-6ce8-7741-8406-00000000abcd"
	if err := ValidSessionID(id); err != nil {
		t.Fatalf("canonical id: %v", err)
	}
	var fe *wire.FieldError
	for _, bad := range []string{strings.ToUpper(id), "01a22bdc-6ce8-7741-8406-00000000abcD"} {
		err := ValidSessionID(bad)
		if !errors.As(err, &fe) || fe.Field != "sessionId" || !errors.Is(err, wire.ErrInvalid) || !strings.Contains(err.Error(), `use the lower-case form "`+id+`"`) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
