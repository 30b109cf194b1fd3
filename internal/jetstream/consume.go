package jetstream

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consumer is an ordered consumer whose messages arrive on a channel, for
// loops that also watch a context. It uses Consume rather than Messages:
// on a cluster, a consumer's first pull request can reach a server that does
// not know the new consumer yet and come back as "no responders". Consume
// reports that to the ordered consumer, which recreates itself at once; the
// Messages iterator ignores it and stalls until two heartbeats are missed.
type consumer struct {
	js     jetstream.JetStream
	stream string
	cons   jetstream.Consumer
	cc     jetstream.ConsumeContext
	msgs   chan jetstream.Msg
	closed chan error // receives once if the connection closes for good
	done   chan struct{}
	halted sync.Once // closes done
	once   sync.Once // stops consuming
}

// startConsumer creates an ordered consumer on stream with cfg and starts
// consuming. Call stop when done.
func startConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig) (*consumer, error) {
	cons, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, err
	}
	c := &consumer{
		js:     js,
		stream: stream,
		cons:   cons,
		msgs:   make(chan jetstream.Msg, 256),
		closed: make(chan error, 1),
		done:   make(chan struct{}),
	}
	c.cc, err = cons.Consume(func(m jetstream.Msg) {
		select {
		case c.msgs <- m:
		case <-c.done:
		}
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		// Everything else (missed heartbeats, gaps, no responders, leader
		// changes) the ordered consumer recovers from by itself.
		if errors.Is(err, jetstream.ErrConnectionClosed) {
			select {
			case c.closed <- err:
			default:
			}
		}
	}))
	if err != nil {
		c.deleteServerSide()
		return nil, err
	}
	return c, nil
}

// next returns the next message, or an error when ctx is done or the
// connection has closed.
func (c *consumer) next(ctx context.Context) (jetstream.Msg, error) {
	return c.nextWatched(ctx, func() error { return nil })
}

// nextWatched is next that also gives up when stalled says the consumer is
// stuck: polled every stallCheck while no message comes.
func (c *consumer) nextWatched(ctx context.Context, stalled func() error) (jetstream.Msg, error) {
	t := time.NewTicker(stallCheck)
	defer t.Stop()
	for {
		select {
		case m := <-c.msgs:
			return m, nil
		case err := <-c.closed:
			return nil, err
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			if err := stalled(); err != nil {
				return nil, err
			}
		}
	}
}

// stallCheck is how often a consumer that delivers nothing is checked
// against the stream's end. An ordered consumer whose server died is only
// replaced after missed heartbeats (10 s), and may fail to recreate itself
// during an election; a Store must not sit still that long while the log
// moves on.
const stallCheck = 500 * time.Millisecond

// tryNext returns a message that has already arrived, without waiting.
func (c *consumer) tryNext() (jetstream.Msg, bool) {
	select {
	case m := <-c.msgs:
		return m, true
	default:
		return nil, false
	}
}

// stop ends consumption and deletes the server-side consumer (best effort:
// an ordered consumer also expires by itself once inactive).
func (c *consumer) stop() {
	c.halt()
	c.once.Do(func() {
		c.cc.Stop()
		c.deleteServerSide()
	})
}

// halt makes the handler drop what arrives from now on.
func (c *consumer) halt() {
	c.halted.Do(func() { close(c.done) })
}

// abandon is stop for a consumer that failed (stalled), without waiting:
// nats.go's ordered consumer holds its lock for a whole attempt to
// recreate itself, 10 s when its requests go unanswered (the meta leader
// is being elected), and its Stop waits for that lock. A Store waiting
// for it would sit still that long while the log moves on. What it has
// delivered stays delivered, and nothing more arrives from it.
func (c *consumer) abandon() {
	c.halt()
	go c.stop()
}

func (c *consumer) deleteServerSide() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if info := c.cons.CachedInfo(); info != nil {
		_ = c.js.DeleteConsumer(ctx, c.stream, info.Name)
	}
}
