//go:build !unix

package main

import "os/exec"

// killGroupOnCancel: without process groups, Cancel kills go test itself
// (the default); its children may outlive it.
func killGroupOnCancel(cmd *exec.Cmd) {}
