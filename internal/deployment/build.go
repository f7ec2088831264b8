package deployment

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// BuildIDEnv is the environment variable that overrides the build id a
// worker polls as (the --build-id flag).
const BuildIDEnv = "SLUICE_BUILD_ID"

// BuildID is this binary's build id: the git revision it was built from
// (the first 12 digits of debug.ReadBuildInfo's vcs.revision) when the
// tree was clean; otherwise, a modified tree or a build without version
// control information, "bin-" and the first 12 hex digits of the SHA-256
// of the executable, so that two different binaries never share a build
// id. A build id names the code that serves a pinned history: two builds
// with different workflow code under one id would be exactly the mixed
// deploy that versioning is there to prevent.
func BuildID() (string, error) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" && !modified {
			return "git-" + rev[:min(12, len(rev))], nil
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the executable for its build id: %w", err)
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("opening the executable for its build id: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing the executable for its build id: %w", err)
	}
	return "bin-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// Name is the name of the Worker Deployment a task queue's workers belong
// to: the task queue's name, with the character deployment names may not
// hold (".") replaced by "-". The token keepers' task queue
// (tokenkeeper.TaskQueue) belongs to the deployment of the task queue it
// is derived from: one version of Sluice serves both.
func Name(taskQueue string) string {
	return strings.ReplaceAll(taskQueue, ".", "-")
}
