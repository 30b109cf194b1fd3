//go:build !linux

package main

import "os/exec"

// startProcess starts cmd. Only Linux can tie a child's life to the test
// binary's (see proc_linux_test.go); elsewhere TestMain's cleanup stops
// the nodes, except after a timeout panic.
func startProcess(cmd *exec.Cmd) error { return cmd.Start() }
