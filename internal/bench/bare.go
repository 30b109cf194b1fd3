package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/pifleet/sessionlog/internal/session"
)

// bareName is the row of the bare CAS publish: the floor any design on
// JetStream stands on.
const bareName = "bare CAS publish"

// bareSink publishes each record as it is, with no header at all (no
// Pi-* headers, no Nats-Msg-Id dedupe), conditional on the session's last
// sequence, to a stream of its own with the node stream's storage and
// replicas: what a client would do that wants nothing but the CAS.
type bareSink struct {
	js     natsjs.JetStream
	prefix string
	cas    bool
}

// bareStream creates the bare publish's stream (once per Env; removed at
// Close) and returns its subject prefix: a stream of its own, so that the
// node's Store never sees messages without the adapter's headers.
func (e *Env) bareStream(ctx context.Context) (string, error) {
	if e.bareName != "" {
		return e.barePrefix, nil
	}
	info, err := e.Raw.JS.Stream(ctx, e.cfg.Stream)
	if err != nil {
		return "", err
	}
	node := info.CachedInfo().Config
	name, prefix := e.cfg.Stream+"_BENCH_BARE", e.cfg.SubjectPrefix+"_bench_bare"
	_, err = e.Raw.JS.CreateOrUpdateStream(ctx, natsjs.StreamConfig{
		Name: name, Subjects: []string{prefix + ".*"}, Storage: node.Storage, Replicas: node.Replicas,
		MaxMsgSize: node.MaxMsgSize, Discard: node.Discard,
	})
	if err != nil {
		return "", fmt.Errorf("create the bare publish's stream %s: %w", name, err)
	}
	e.bareName, e.barePrefix = name, prefix
	return prefix, nil
}

// dropBareStream deletes the bare publish's stream, if one was made.
func (e *Env) dropBareStream(ctx context.Context) error {
	if e.bareName == "" {
		return nil
	}
	err := e.Raw.JS.DeleteStream(ctx, e.bareName)
	if errors.Is(err, natsjs.ErrStreamNotFound) {
		err = nil
	}
	return err
}

func (s *bareSink) publish(ctx context.Context, sid string, data []byte, expect uint64, cas bool) (uint64, error) {
	m := &nats.Msg{Subject: s.prefix + "." + sid, Data: data}
	var opts []natsjs.PublishOpt
	if cas {
		opts = append(opts, natsjs.WithExpectLastSequencePerSubject(expect))
	}
	ack, err := s.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// create publishes the records one by one, the first expecting an empty
// subject (untimed: the scenario creates sessions before it measures).
func (s *bareSink) create(ctx context.Context, _ int, sid string, recs []session.Record) (uint64, error) {
	var last uint64
	for i, r := range recs {
		var err error
		if last, err = s.publish(ctx, sid, r.Data, last, i == 0 || s.cas); err != nil {
			return 0, err
		}
	}
	return last, nil
}

func (s *bareSink) append(ctx context.Context, _ int, sid string, last uint64, rec session.Record) (uint64, error) {
	return s.publish(ctx, sid, rec.Data, last, s.cas)
}
