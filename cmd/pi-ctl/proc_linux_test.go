//go:build linux

package main

import (
	"os/exec"
	"runtime"
	"syscall"
)

// spawn runs functions on one OS thread that stays locked for the life of
// the test binary. Pdeathsig fires when the thread that started a child
// exits, not the process; starting every child from this thread makes it
// fire only when the test binary dies (a timeout panic, a kill), so no
// pi-node or nats-server outlives a test run.
var spawn = make(chan func())

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose
		for f := range spawn {
			f()
		}
	}()
}

// startProcess starts cmd so that the kernel kills it with the test binary.
func startProcess(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	errc := make(chan error, 1)
	spawn <- func() { errc <- cmd.Start() }
	return <-errc
}
