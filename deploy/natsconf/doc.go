// Command natsconf writes the route and gateway credentials of a pi-node
// --nats-auth file (pi-ctl gen-secrets' nats-auth.json) as nats-server
// configuration variables, for a plain nats-server that joins pi-nodes: the
// tie-breaker of a cross-region deployment (deploy/compose/tiebreaker.conf
// includes the output and sets `authorization: $PI_ROUTES` and
// `authorization: $PI_GATEWAYS`; nats-server presents the same user and
// password when it dials).
//
//	natsconf secrets/nats-auth.json > secrets/nats-peers.conf
//
// nats-server cannot include nats-auth.json itself: its users carry roles,
// which nats-server does not know. The output holds the peers' passwords:
// write it next to nats-auth.json, as private as that.
package main
