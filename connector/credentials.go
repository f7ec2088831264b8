package connector

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Credentials looks up a credential by the environment variable name the
// registry declares for it (registry Auth.Credentials). It returns an error
// wrapping ErrNoCredential when the credential is not set.
type Credentials func(name string) (string, error)

// ErrNoCredential is wrapped by Credentials lookups that find nothing.
var ErrNoCredential = errors.New("credential not set")

// EnvCredentials reads the variable NAME, or, when it is empty, the file
// named by NAME_FILE (surrounding whitespace trimmed), the Docker and
// Kubernetes secrets convention.
func EnvCredentials(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("looking up credential: empty variable name: %w", ErrNoCredential)
	}
	if v := os.Getenv(name); v != "" {
		return v, nil
	}
	if file := os.Getenv(name + "_FILE"); file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("reading credential %s from %s_FILE: %w", name, name, err)
		}
		v := strings.TrimSpace(string(data))
		if v == "" {
			return "", fmt.Errorf("reading credential %s: the file named by %s_FILE is empty: %w", name, name, ErrNoCredential)
		}
		return v, nil
	}
	return "", fmt.Errorf("looking up credential: set %s or %s_FILE: %w", name, name, ErrNoCredential)
}

// MapCredentials returns Credentials served from a map of variable name to
// value (tests, the simulator's test credentials).
func MapCredentials(m map[string]string) Credentials {
	return func(name string) (string, error) {
		if v, ok := m[name]; ok && v != "" {
			return v, nil
		}
		return "", fmt.Errorf("looking up credential: %s is not in the credential map: %w", name, ErrNoCredential)
	}
}
