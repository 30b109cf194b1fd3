package jetstream

import (
	"context"
	"errors"

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
	codeMaxConsumers            jetstream.ErrorCode = 10026 // JSMaximumConsumersLimitErr: the stream has as many consumers as its limit
	codeMsgNotFound             jetstream.ErrorCode = 10037 // JSNoMessageFoundErr
	codeNotEnabledForAccount    jetstream.ErrorCode = 10039 // JSNotEnabledForAccountErr
	codeStorageExceeded         jetstream.ErrorCode = 10047 // JSStorageResourcesExceededErr
	codeInsufficientResources   jetstream.ErrorCode = 10023 // JSInsufficientResourcesErr: the server's JetStream limit (--max-file-store) is reached
	codeMsgTooLarge             jetstream.ErrorCode = 10054 // JSStreamMessageExceedsMaximumErr
	codeStreamNotFound          jetstream.ErrorCode = 10059 // JSStreamNotFoundErr
	codeRestoreNameExists       jetstream.ErrorCode = 10130 // JSStreamNameExistRestoreFailedErr
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
// returned as they are: retrying them would not help. The message of a
// translated error is ours (a *BackendError): it reaches API clients, and
// nats.go's text ("nats: API error: code=400 err_code=10071 ...") is for
// the server's log, not for them.
func translate(err error, conflict error) error {
	if err == nil {
		return nil
	}
	be := func(sentinel error, reason string) error {
		return &BackendError{Sentinel: sentinel, Reason: reason, Cause: err}
	}
	switch apiCode(err) {
	case codeWrongLastSeq:
		return be(conflict, "the session's last sequence is not the one expected (another write came first)")
	case codeWrongLastSeqConstant:
		return be(conflict, "another write to the session was still in flight")
	case codeBatchDuplicateMsgID, codeDuplicateInProcess:
		return be(conflict, "a record with the same id is stored already or being stored")
	case codeMsgTooLarge:
		return be(wire.ErrTooLarge, "a record exceeds the stream's maximum message size")
	case codeHeaderTooLarge:
		return be(wire.ErrTooLarge, "a record's headers exceed the stream's limit")
	case codeBatchTooLarge:
		return be(wire.ErrTooLarge, "more records than one atomic batch of the server carries")
	case codeMsgNotFound:
		return be(wire.ErrNotFound, "no such message in the stream")
	case codeStreamNotFound:
		return be(wire.ErrNotFound, "the stream does not exist")
	case codeRestoreNameExists:
		return be(conflict, "a stream of that name exists already")
	case codeClusterNoPeers, codeClusterNotAvail, codeClusterNotLeader:
		return be(wire.ErrUnavailable, "JetStream has no leader or quorum for the stream right now")
	case codeNotEnabledForAccount, codeNotEnabled:
		return be(wire.ErrUnavailable, "JetStream is not enabled (yet)")
	case codeStorageExceeded, codeInsufficientResources:
		return be(wire.ErrUnavailable, "JetStream's storage is full (its file storage limit, --max-file-store, or the disk)")
	case codeStoreFailed:
		return be(wire.ErrUnavailable, "JetStream could not store the records")
	case codeExpectedLastSeqNotReady:
		return be(wire.ErrUnavailable, "the stream cannot check the expected last sequence yet (a new leader is catching up)")
	case codeBatchIncomplete, codeBatchTooManyInflight:
		return be(wire.ErrUnavailable, "the atomic batch did not complete")
	case codeMaxConsumers:
		return be(wire.ErrUnavailable, consumerLimitReason)
	case codeStreamSealed, codeStreamOffline, codeStreamOfflineReason:
		// A fenced (sealed) or lost home region's stream: a region
		// failover is under way, and a retry goes to the new home.
		return be(wire.ErrUnavailable, "the stream is sealed or offline (a region failover may be under way)")
	}
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		return be(wire.ErrTooLarge, "a message exceeds the NATS server's max_payload")
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return be(wire.ErrNotFound, "no such key")
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return be(wire.ErrNotFound, "the bucket does not exist")
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return be(wire.ErrNotFound, "the stream does not exist")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, jetstream.ErrNoStreamResponse):
		return be(wire.ErrUnavailable, "no reply from JetStream in time")
	case isTransport(err):
		return be(wire.ErrUnavailable, "JetStream cannot be reached (no responders, or the connection is down)")
	}
	return err
}

// consumerLimitReason is the reason of a consumer refused for the stream's
// limit: nats-server caps the consumers of a stream (over the whole
// cluster, ordered consumers and KV watchers included) at its
// jetstream.limits.default_max_consumers, 1,000 unless set, since 2.15;
// a stream or an account may set its own.
const consumerLimitReason = "the stream has as many consumers as nats-server allows it (its limit per stream: 1,000 by default since nats-server 2.15, jetstream { limits { default_max_consumers } }); retry later"

// isConsumerLimit reports whether err is JetStream refusing a consumer for
// the stream's limit on consumers.
func isConsumerLimit(err error) bool {
	return apiCode(err) == codeMaxConsumers || errors.Is(err, jetstream.ErrMaximumConsumersLimit)
}

// BackendError is a JetStream failure translated for the engine and its
// clients: its message is the sentinel's and a reason in our words, while
// errors.Is and errors.As reach both the sentinel and the original error
// (Cause, with nats.go's codes and text, for logs and diagnostics).
type BackendError struct {
	Sentinel error // a wire sentinel: ErrConflict, ErrTooLarge, ...
	Reason   string
	Cause    error
}

func (e *BackendError) Error() string { return e.Sentinel.Error() + ": " + e.Reason }

// Unwrap returns the sentinel and the cause.
func (e *BackendError) Unwrap() []error { return []error{e.Sentinel, e.Cause} }

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
