//go:build !linux

package versitygw

import "os/exec"

// xattrSupported is false off Linux: versitygw then keeps metadata in a
// sidecar directory.
func xattrSupported(string) bool { return false }

// orphanGuard does nothing off Linux: Cleanup kills the server.
func orphanGuard(*exec.Cmd) {}
