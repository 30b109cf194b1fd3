// Package testutil is the one home of the helpers every test package
// needs: polling for a condition (WaitFor, Poll) within bounds scaled by
// the one knob for slow machines (Scale, PI_TEST_SCALE), free loopback ports
// (FreePort, FreePorts) and a buffer a test may read while another
// goroutine writes it (SyncBuffer). It imports no package of this module
// but loopback, so that any package's tests can use it — the JetStream
// adapter's included.
package testutil
