package jetstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/pifleet/sessionlog/internal/wire"
)

// JetStream API error codes this adapter translates, from nats-server
// v2.15.2 server/errors.json. nats.go names only some of them.
const (
	codeClusterNoPeers          jetstream.ErrorCode = 10005 // JSClusterNoPeersErrF: no placement yet
	codeClusterNotAvail         jetstream.ErrorCode = 10008 // JSClusterNotAvailErr: no meta/group leader
	codeClusterNotLeader        jetstream.ErrorCode = 10009 // JSClusterNotLeaderErr
	codeMsgNotFound             jetstream.ErrorCode = 10037 // JSNoMessageFoundErr
	codeNotEnabledForAccount    jetstream.ErrorCode = 10039 // JSNotEnabledForAccountErr
	codeStorageExceeded         jetstream.ErrorCode = 10047 // JSStorageResourcesExceededErr
	codeMsgTooLarge             jetstream.ErrorCode = 10054 // JSStreamMessageExceedsMaximumErr
	codeStreamNotFound          jetstream.ErrorCode = 10059 // JSStreamNotFoundErr
	codeWrongLastSeq            jetstream.ErrorCode = 10071 // JSStreamWrongLastSequenceErrF
	codeNotEnabled              jetstream.ErrorCode = 10076 // JSNotEnabledErr
	codeStoreFailed             jetstream.ErrorCode = 10077 // JSStreamStoreFailedF (also raft proposal failures)
	codeHeaderTooLarge          jetstream.ErrorCode = 10097 // JSStreamHeaderExceedsMaximumErr
	codeDuplicateInProcess      jetstream.ErrorCode = 10158 // JSStreamDuplicateMessageConflict
	codeExpectedLastSeqNotReady jetstream.ErrorCode = 10163 // JSStreamExpectedLastSeqPerSubjectNotReady
	codeWrongLastSeqConstant    jetstream.ErrorCode = 10164 // JSStreamWrongLastSequenceConstantErr (R>1)
	codeBatchIncomplete         jetstream.ErrorCode = 10176 // JSAtomicPublishIncompleteBatchErr
	codeBatchTooLarge           jetstream.ErrorCode = 10199 // JSAtomicPublishTooLargeBatchErrF
	codeBatchDuplicateMsgID     jetstream.ErrorCode = 10201 // JSAtomicPublishContainsDuplicateMessageErr
	codeBatchTooManyInflight    jetstream.ErrorCode = 10210 // JSAtomicPublishTooManyInflight
)

// apiCode returns the JetStream API error code carried by err, or 0.
func apiCode(err error) jetstream.ErrorCode {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode
	}
	return 0
}

// translate maps an error from nats.go, jetstreamext or the JetStream API to
// the session vocabulary, keeping the original wrapped for diagnostics.
// conflict is the sentinel for a lost optimistic write: ErrExists for an
// exclusive creation, ErrConflict otherwise. Errors that are neither
// transport nor contract failures (a misconfigured stream, a bug) are
// returned as they are: retrying them would not help.
func translate(err error, conflict error) error {
	if err == nil {
		return nil
	}
	switch apiCode(err) {
	case codeWrongLastSeq, codeWrongLastSeqConstant, codeBatchDuplicateMsgID, codeDuplicateInProcess:
		return fmt.Errorf("%w: %w", conflict, err)
	case codeMsgTooLarge, codeHeaderTooLarge, codeBatchTooLarge:
		return fmt.Errorf("%w: %w", wire.ErrTooLarge, err)
	case codeMsgNotFound, codeStreamNotFound:
		return fmt.Errorf("%w: %w", wire.ErrNotFound, err)
	case codeClusterNoPeers, codeClusterNotAvail, codeClusterNotLeader, codeNotEnabledForAccount,
		codeStorageExceeded, codeNotEnabled, codeStoreFailed, codeExpectedLastSeqNotReady,
		codeBatchIncomplete, codeBatchTooManyInflight,
		// A fenced (sealed) or lost home region's stream: a region
		// failover is under way, and a retry goes to the new home.
		codeStreamSealed, codeStreamOffline, codeStreamOfflineReason:
		return fmt.Errorf("%w: %w", wire.ErrUnavailable, err)
	}
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		return fmt.Errorf("%w: %w", wire.ErrTooLarge, err)
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted),
		errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w: %w", wire.ErrNotFound, err)
	case isTransport(err):
		return fmt.Errorf("%w: %w", wire.ErrUnavailable, err)
	}
	return err
}

// isTransport reports whether err means the request or its answer was lost:
// the outcome of a write is then unknown.
func isTransport(err error) bool {
	for _, target := range []error{
		nats.ErrNoResponders, jetstream.ErrNoStreamResponse, nats.ErrTimeout,
		context.DeadlineExceeded, nats.ErrConnectionClosed, nats.ErrConnectionDraining,
		nats.ErrConnectionReconnecting, nats.ErrDisconnected, nats.ErrNoServers,
		nats.ErrStaleConnection, nats.ErrSlowConsumer,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// retryableProvisioning reports whether a provisioning call failed because
// the cluster is still forming (no meta leader, peers not yet known, or the
// API not answering yet) rather than because of the request itself.
func retryableProvisioning(err error) bool {
	var rl retryLater
	if errors.As(err, &rl) {
		return true
	}
	switch apiCode(err) {
	case codeClusterNoPeers, codeClusterNotAvail, codeClusterNotLeader, codeNotEnabledForAccount, codeNotEnabled:
		return true
	}
	return isTransport(err)
}
