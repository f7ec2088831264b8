package versitygw

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// xattrSupported reports whether dir's filesystem stores user extended
// attributes, where versitygw's posix backend keeps object metadata.
func xattrSupported(dir string) bool {
	p := filepath.Join(dir, ".xattr-probe")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		return false
	}
	defer os.Remove(p)
	return syscall.Setxattr(p, "user.sluice.probe", []byte("1"), 0) == nil
}

// orphanGuard makes the kernel kill the server if the test process dies
// without cleaning up (a test timeout, a crash), so no server outlives its
// tests.
func orphanGuard(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
