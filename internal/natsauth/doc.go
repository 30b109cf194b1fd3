// Package natsauth is the file of users and roles of pi-node's embedded
// NATS server (--nats-auth, docs/SECURITY.md): its format, its checks,
// and what each role may publish and subscribe to, as plain subject lists.
// It links no server: pi-node's embedded package turns a File into
// nats-server options, and pi-ctl writes one (gen-secrets, nats-user).
package natsauth
