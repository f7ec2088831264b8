//go:build !unix

package sink

import "os"

// lockFile: without flock(2) a temporary file's writer cannot be told
// alive or dead.
func lockFile(*os.File) error { return errLockUnsupported }
