// Package region holds the end-to-end test of cross-region failover: real
// pi-node and nats-server processes on loopback, built from this module by
// TestMain — two regions of pi-nodes (embedded servers joined by gateways)
// and a nats-server as the tie-breaker, a third small region that keeps
// the JetStream meta quorum and holds the region record.
//
// TestRegionFailover runs the scenario of docs/CROSS-REGION.md: writers in
// both regions on twenty sessions; a failover refused while the home is
// healthy; the read lag of the mirror region measured; a delete through
// the mirror region (the session gone from both regions' reads and
// streams) and an archive pass refused; the home region
// killed (SIGKILL); pi-ctl failover to the other region; writers go on
// there, and a delete in the new home; the old home brought back and pi-ctl
// failback, which brings neither deleted session back; every acknowledged
// entry then stored exactly once and every session holding both regions'
// entries, the ones only the old home had as the branches they were.
//
// TestRegionEraseMarkers is the marker test of a delete across regions: a
// marker in a session's content found in both regions' files before, in
// none after. TestRegionEncryptionMarkers: with --encryption-key-file, in
// none at all.
//
// TestRegionStartupWindow loses the home 0.5 s after the first write of a
// new deployment and runs every operation twice; TestRegionMirrorIsHonest
// checks what a mirror-region node says and serves while its mirror lacks
// what the home acknowledged (restarted with a backlog, or stalled after
// the home's outage).
//
// Run with -v to see the measured figures (RTO, RPO, mirror lag, the
// durations of failover and failback): lines starting with MEASURED.
// PI_REGION_NODES=3 runs three pi-nodes per region (R3 streams) instead
// of one; PI_NODE_BIN runs a given pi-node binary.
//
// The tests are skipped with -short. They are Linux-only (process groups,
// parent-death signals).
package region
