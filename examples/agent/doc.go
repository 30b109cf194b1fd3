// Command agent is a small agent worker on sessionlog: an agent loop around
// a fake LLM that answers deterministically and calls tools, writing its
// session through the public client exactly as pi's SessionManager would.
//
// It plays the eight steps of pi's debugging story (the conformance case
// example-auth-salt-debugging): a model change; a question; a read tool
// call and its result; the root-cause answer; a branch back to the
// question; a second question with a grep tool call and its result; a
// label on the root-cause answer; a name for the session. Then it prints
// the session tree, and opens the session again as another worker would.
//
// Start a pi-node, then run it:
//
//	go run ./cmd/pi-node
//	go run ./examples/agent                                  # through pi-node's HTTP API
//	go run ./examples/agent --nats nats://127.0.0.1:4222     # on JetStream directly
//	go run ./cmd/pi-ctl tree <session-id>                    # the same tree, from pi-node
package main
