// Package tokenstore holds connector.TokenStore implementations. File
// keeps one JSON file per key in a directory and coordinates the processes
// of one machine with an exclusive file lock; Memory keeps tokens in one
// process.
package tokenstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/gofrs/flock"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/internal/atomicfile"
)

// lockRetry is how often a waiting process tries the lock again.
const lockRetry = 20 * time.Millisecond

// validKey is what a key may look like: it becomes a file name.
var validKey = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// File is a connector.TokenStore on one machine: <dir>/<key>.json holds the
// token (mode 0600, written to a temporary file and renamed, so readers
// never see a torn write), <dir>/<key>.lock is locked exclusively with
// flock(2) by WithLock. The directory is created 0700 on first write.
type File struct {
	dir string
}

var _ connector.TokenStore = (*File)(nil)

// NewFile returns a store in dir; nothing is created until a token is
// saved or a lock taken.
func NewFile(dir string) (*File, error) {
	if dir == "" {
		return nil, errors.New("creating token store: empty directory")
	}
	return &File{dir: dir}, nil
}

// Dir returns the store's directory.
func (f *File) Dir() string { return f.dir }

// record is the file format: the token and its times, nothing else.
type record struct {
	AccessToken string    `json:"access_token"`
	ExpiresAt   time.Time `json:"expires_at"`
	IssuedAt    time.Time `json:"issued_at"`
	RequestedAt time.Time `json:"requested_at"`
}

func (f *File) paths(key string) (tokenPath, lockPath string, err error) {
	if !validKey.MatchString(key) {
		return "", "", fmt.Errorf("token store key %q: expected 1 to 128 letters, digits, - or _", key)
	}
	return filepath.Join(f.dir, key+".json"), filepath.Join(f.dir, key+".lock"), nil
}

// Load reads the token for key; ok is false when no file exists.
func (f *File) Load(_ context.Context, key string) (connector.Token, bool, error) {
	p, _, err := f.paths(key)
	if err != nil {
		return connector.Token{}, false, fmt.Errorf("loading token: %w", err)
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return connector.Token{}, false, nil
	}
	if err != nil {
		return connector.Token{}, false, fmt.Errorf("loading token from %s: %w", p, err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return connector.Token{}, false, fmt.Errorf("loading token from %s: the file is not a token record (delete it to start over): %w", p, err)
	}
	return connector.Token{AccessToken: r.AccessToken, ExpiresAt: r.ExpiresAt, IssuedAt: r.IssuedAt, RequestedAt: r.RequestedAt}, true, nil
}

// Save writes the token for key atomically with mode 0600.
func (f *File) Save(_ context.Context, key string, t connector.Token) error {
	p, _, err := f.paths(key)
	if err != nil {
		return fmt.Errorf("saving token: %w", err)
	}
	if err := f.ensureDir(); err != nil {
		return err
	}
	data, err := json.Marshal(record{AccessToken: t.AccessToken, ExpiresAt: t.ExpiresAt.UTC(),
		IssuedAt: t.IssuedAt.UTC(), RequestedAt: t.RequestedAt.UTC()})
	if err != nil {
		return fmt.Errorf("saving token: %w", err)
	}
	if err := writeFile(p, data, 0o600); err != nil {
		return fmt.Errorf("saving token: %w", err)
	}
	return nil
}

// writeFile writes a token file: whole, mode 0600, and durably (the file
// and its directory synced). A variable for the tests.
var writeFile = atomicfile.Write

// WithLock runs fn holding the exclusive lock of key. The lock is an
// flock(2) on <key>.lock: it excludes other processes and other File
// values in this process alike, and the kernel drops it when a process
// dies.
func (f *File) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	_, lp, err := f.paths(key)
	if err != nil {
		return fmt.Errorf("locking token: %w", err)
	}
	if err := f.ensureDir(); err != nil {
		return err
	}
	l := flock.New(lp, flock.SetPermissions(0o600))
	ok, err := l.TryLockContext(ctx, lockRetry)
	if err != nil {
		return fmt.Errorf("locking %s: %w", lp, err)
	}
	if !ok {
		return fmt.Errorf("locking %s: lock not acquired", lp)
	}
	defer l.Unlock()
	return fn(ctx)
}

func (f *File) ensureDir() error {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return fmt.Errorf("creating token directory %s: %w", f.dir, err)
	}
	st, err := os.Stat(f.dir)
	if err != nil {
		return fmt.Errorf("checking token directory %s: %w", f.dir, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(f.dir, 0o700); err != nil {
			return fmt.Errorf("restricting token directory %s to its owner: %w", f.dir, err)
		}
	}
	return nil
}
