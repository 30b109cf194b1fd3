// Package enginetest is the conformance suite for the session package's
// storage interfaces, and for the Writer above them. Every implementation —
// the in-memory fakes and the JetStream adapter — runs the same TestLog and
// TestCursors, so the fakes the engine is tested against behave like the
// real thing; and every transport a Writer writes through — the in-memory
// log, JetStream (one node and three), the public client's HTTP, NATS-API
// and JetStream transports — runs the same TestWriter. It imports the
// engine it checks (store, writer), so it sits beside them, not under
// session, whose folder would have it point back up the layers.
package enginetest
