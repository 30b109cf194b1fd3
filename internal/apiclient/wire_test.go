package apiclient_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pifleet/sessionlog/internal/apiclient"
	"github.com/pifleet/sessionlog/internal/nodetest"
	"github.com/pifleet/sessionlog/internal/testutil"
	"github.com/pifleet/sessionlog/internal/wire"
)

// TestReachesWire: the clients reach every operation of wire's table over
// both transports (watch over HTTP only). What an operation answers does
// not matter here (a missing session, a node without archive): it must be
// pi-node's own reply, not "no route", no responders or a foreign body.
func TestReachesWire(t *testing.T) {
	n := nodetest.Start(t, nodetest.Options{})
	sid := testutil.SessionID(t)
	for name, c := range transports(t, n) {
		for _, req := range wire.Requests() {
			o := req.Op()
			t.Run(name+"/"+o.Name, func(t *testing.T) {
				if o.HTTPOnly() && name == "NATS" {
					t.Skip("HTTP only")
				}
				req = fill(req, sid)
				var err error
				if o == wire.OpWatch {
					err = c.(apiclient.Follower).Follow(ctxT(t), sid, 0, func(apiclient.SeqEntry) error { return nil }, func(error) {})
				} else {
					_, err = c.Do(ctxT(t), req)
				}
				var ae *apiclient.Error
				var ue *apiclient.UnreachableError
				switch {
				case errors.As(err, &ue):
					t.Fatalf("%s did not reach pi-node: %v", o.Name, err)
				case errors.As(err, &ae) && (ae.Foreign || strings.Contains(ae.Message, "no route")):
					t.Fatalf("%s has no route on pi-node: %v", o.Name, err)
				case err != nil && ae == nil:
					t.Fatalf("%s: %v", o.Name, err)
				}
			})
		}
	}
}

// fill sets the session and client fields of a zero request.
func fill(req wire.Request, sid string) wire.Request {
	v := reflect.New(reflect.TypeOf(req)).Elem()
	if f := v.FieldByName("SessionID"); f.IsValid() {
		f.SetString(sid)
	}
	if f := v.FieldByName("Client"); f.IsValid() {
		f.SetString("c1")
	}
	return v.Interface().(wire.Request)
}
