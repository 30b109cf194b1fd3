// Command pi-ctl is the operator CLI of sessionlog. Its "file" commands work
// offline on a local pi session file (.jsonl); the server commands talk to a
// pi-node. Run "pi-ctl --help" for the list.
//
// Exit codes: 0 success, 1 invalid input or problems found, 2 usage error.
package main
