// Package deploytest checks the deployment files (Dockerfile,
// docker-compose.yml, deploy/k8s, the alert rules of deploy/prometheus and
// the dashboard of deploy/grafana) against what pi-node really serves and
// accepts, and runs them.
//
// The static checks run with every `go test ./...`: they decode the
// Kubernetes manifests strictly into the k8s.io/api types and cross-check
// ports, probe paths, volume mounts, flags and environment variables with
// the flags of a freshly built pi-node, and the metrics the rules and the
// dashboard use with its /metrics (promtool, when installed, runs the
// rules).
//
// TestCompose brings the docker-compose cluster up and breaks it (a node
// killed, a node cut off the network); TestComposeRollingRestart restarts
// its nodes one at a time under write load; TestComposeRegion fails the
// cross-region topology of deploy/compose/region.yml over and back. They
// need a Docker engine and minutes, so they run only with
// PI_COMPOSE_TEST=1 (test/compose/run.sh sets it after building the
// images).
package deploytest
