package jetstream

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrMissing marks a stream or bucket that does not exist, as opposed to
// one that cannot be reached right now (an election, a partition): readiness
// fails at once for the first and only after a grace for the second.
var ErrMissing = errors.New("missing")

// Classify wraps err with ErrMissing when it says a stream or bucket does
// not exist.
func Classify(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) || apiCode(err) == codeStreamNotFound {
		return fmt.Errorf("%w: %w", ErrMissing, err)
	}
	return err
}
