package archive

import (
	"fmt"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// TooRecentError refuses a restore inside the log's dedupe window: the
// restored records would carry message ids the log still remembers, and it
// would drop them as duplicates. Unwraps to wire.ErrConflict.
type TooRecentError struct {
	Session  string
	Modified time.Time // when the session's last record was written
	Until    time.Time // when the restore can succeed
}

func (e *TooRecentError) Error() string {
	return fmt.Sprintf("session %s was last written at %s; the log refuses its entry ids as duplicates until %s (its duplicate window): restore it after that",
		e.Session, e.Modified.UTC().Format(time.RFC3339), e.Until.UTC().Format(time.RFC3339))
}

// Unwrap makes errors.Is(err, wire.ErrConflict) true.
func (e *TooRecentError) Unwrap() error { return wire.ErrConflict }
