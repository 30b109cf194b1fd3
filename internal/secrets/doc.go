// Package secrets makes what a secured pi-node deployment needs and
// writes it safely: a small certificate authority and the one certificate
// every node presents (HTTPS, the NATS client port, and mutual TLS on
// routes and gateways), random tokens and passwords, and files that only
// their owner reads. It links no server and imports nothing of ours, so
// pi-ctl gen-secrets and nats-user stay offline tools.
package secrets
