//go:build unix

package sink

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock(2) on f without waiting. The lock
// lives as long as f's open file description: until f is closed or the
// process dies.
//
// A filesystem without flock(2) (some network mounts) reports
// errLockUnsupported: writers then go on unlocked, and no temporary file
// there is ever removed as stale.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EINVAL) {
		return errLockUnsupported
	}
	return err
}
