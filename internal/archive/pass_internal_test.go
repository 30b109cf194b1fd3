package archive

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pifleet/sessionlog/internal/jetstream"
	"github.com/pifleet/sessionlog/internal/jetstream/embedded/embeddedtest"
	"github.com/pifleet/sessionlog/internal/jetstream/jstest"
	"github.com/pifleet/sessionlog/internal/store"
)

// An operator's pass that finds one running on this node waits for it and
// then runs, instead of failing with a conflict the operator could not
// have avoided (the periodic pass starts whenever its ticker says); a wait
// cut short by the request's context says what it waited for.
func TestPassWaitsForTheRunningPass(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := embeddedtest.RunServer(t, false)
	c := jstest.Connect(t, srv.ClientURL())
	cfg := jetstream.NewConfig()
	if err := jetstream.Provision(ctx, c.JS, cfg); err != nil {
		t.Fatal(err)
	}
	log := jetstream.NewLog(c.JS, cfg)
	st := store.New(log, store.Options{})
	if err := st.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a := New(st, log, jetstream.NewArchive(log, jetstream.NewArchiveConfig(cfg)), Options{Node: "t"})

	a.pass <- struct{}{} // a pass is running
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := a.Pass(short, time.Hour)
	stop()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("pass cut short while waiting: %v, want the deadline", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Pass(ctx, time.Hour)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the pass ran beside the running one: %v", err)
	case <-time.After(100 * time.Millisecond): // it is waiting
	}
	<-a.pass // the running pass ends
	if err := <-done; err != nil {
		t.Fatalf("the waiting pass: %v", err)
	}
}
