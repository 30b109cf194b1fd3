package writer_test

import (
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/enginetest"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/session"
)

// The writer contract (enginetest.TestWriter) on the engine's own logs;
// the public client runs it over its transports too (client/).

func TestWriterMem(t *testing.T) {
	enginetest.TestWriter(t, func(t *testing.T) enginetest.WriterEnv {
		l := session.NewMemLog(1000, 8<<20)
		return enginetest.WriterEnv{Log: l, Feed: l}
	})
}

func TestWriterJetStream(t *testing.T) {
	enginetest.TestWriter(t, func(t *testing.T) enginetest.WriterEnv {
		l, _ := jstest.Backend(t, 1, embeddedtest.RunServer(t, true).ClientURL())
		return enginetest.WriterEnv{Log: l, Feed: l}
	})
}

// TestWriterJetStreamR3 runs the contract on a 3-node cluster, where
// conflicts also come back as 10164 and reads must go to the leader.
func TestWriterJetStreamR3(t *testing.T) {
	urls := embeddedtest.URLs(embeddedtest.RunCluster(t, 3, nil))
	enginetest.TestWriter(t, func(t *testing.T) enginetest.WriterEnv {
		// Each test gets its own stream (names derived from the test) on the shared cluster.
		l, _ := jstest.BackendNamed(t, 3, strings.NewReplacer("/", "_").Replace(t.Name()), urls...)
		return enginetest.WriterEnv{Log: l, Feed: l}
	})
}
