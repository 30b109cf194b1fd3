package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// ValidSessionID checks that id is a UUID in its canonical textual form
// (8-4-4-4-12 lower-case hex digits, any version: pi files from before
// UUIDv7 keep their v4 ids). Session ids become subject tokens, so nothing
// else is allowed. Upper-case hex is refused, not folded: ids differing only
// in case would otherwise be two sessions (or, folded, silent aliases), and
// pi itself (crypto.randomUUID, uuidv7) only writes lower case.
func ValidSessionID(id string) error {
	if len(id) != 36 {
		return wire.Invalid("sessionId", fmt.Sprintf("%q is not a UUID (want 36 characters like 01a22ba6-d94f-735d-ac17-131011d6d05b)", id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return wire.Invalid("sessionId", fmt.Sprintf("%q is not a UUID (dash expected at offset %d)", id, i))
			}
		default:
			if c >= 'A' && c <= 'F' {
				return wire.Invalid("sessionId", fmt.Sprintf("%q is not a canonical UUID (upper-case hex at offset %d): use the lower-case form %q", id, i, strings.ToLower(id)))
			}
			if !isHex(c) {
				return wire.Invalid("sessionId", fmt.Sprintf("%q is not a UUID (non-hex character at offset %d)", id, i))
			}
		}
	}
	return nil
}

// ValidTimestamp checks a session header's timestamp: pi writes
// new Date().toISOString() ("2026-01-02T03:04:05.678Z"); any RFC 3339 time
// is accepted, for files of other writers or older pi versions. pi-ctl
// makes the file name of a checked-out session from it, so a value such
// as "../../x/y" must never be stored. Empty means absent (nothing to check).
func ValidTimestamp(ts string) error {
	if ts == "" {
		return nil
	}
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		return wire.Invalid("header.timestamp", fmt.Sprintf("%q is not an RFC 3339 time like 2026-01-02T03:04:05.678Z (what pi writes)", ts))
	}
	return nil
}

// ValidClientID checks a cursor client id: [A-Za-z0-9_-]{1,64}. Client ids
// become KV key tokens, so dots, wildcards and spaces are refused.
func ValidClientID(id string) error {
	if len(id) == 0 || len(id) > 64 {
		return wire.Invalid("client", fmt.Sprintf("client id must be 1-64 characters, got %d", len(id)))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return wire.Invalid("client", fmt.Sprintf("client id %q: character %q at offset %d is not one of [A-Za-z0-9_-]", id, c, i))
		}
	}
	return nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
}
