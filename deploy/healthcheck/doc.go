// Command healthcheck is the probe of the pi-node container image. The image
// is FROM scratch (no shell, no curl), so Docker's HEALTHCHECK and compose's
// healthcheck run this static binary instead:
//
//	/healthcheck                 GET /readyz of the local pi-node; exit 0 on 200
//	/healthcheck /healthz        another path of the local pi-node
//	/healthcheck -print /v1/status
//	/healthcheck -print -X POST -d @- /v1/import < session.jsonl
//
// "The local pi-node" is derived from PI_NODE_HTTP_LISTEN (the variable the
// image sets for pi-node itself), with 0.0.0.0 and :: read as loopback, so
// the probe follows a changed listen address without being edited. A path
// given alone is resolved against it, and PI_NODE_HTTP_TOKEN, when set, is
// sent as the bearer token to it (never to an absolute URL: the token is
// not leaked to another host). When PI_NODE_HTTP_TLS_CERT is set the local
// pi-node serves HTTPS: the probe verifies it against -tls-ca (the CA of the
// secrets directory, e.g. /secrets/ca.pem) or, without it, against that
// certificate itself; 127.0.0.1 must be one of its names (pi-ctl
// gen-secrets adds it).
//
// With -print the whole response (status line, headers, body) is written to
// stdout in HTTP/1.1 wire format, so an operator can read it and a test can
// parse it back with http.ReadResponse. That makes the binary the one way to
// talk HTTP from inside the container, e.g. to a node cut off from the
// network.
//
// Exit codes: 0 the status is the expected one (-expect, default 200; "any"
// accepts every status), 1 another status or the request failed, 2 usage.
package main
