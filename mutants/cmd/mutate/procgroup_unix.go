//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel puts cmd in its own process group and makes Cancel
// kill the whole group: go test, the test binaries and whatever they
// started.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
