package codec

import (
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Where the key ring comes from: the variable itself, else the file it
// names (the NAME / NAME_FILE convention of every Sluice secret).
const (
	EnvKey     = "SLUICE_CODEC_KEY"
	EnvKeyFile = "SLUICE_CODEC_KEY_FILE"
)

// KeySize is the length of a key: AES-256.
const KeySize = 32

// maxKeyringText bounds a key ring file or variable.
const maxKeyringText = 64 << 10

// validID is what a key id may look like: it is written in clear into
// every payload's metadata.
var validID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Keyring holds the payload keys: the first encrypts, every one decrypts.
// Its String and GoString never show key material.
type Keyring struct {
	keys []*key
	byID map[string]*key
}

type key struct {
	id   string
	aead cipher.AEAD
}

// ParseKeyring reads a key ring: one key per line (or comma-separated),
// each base64 of KeySize random bytes, optionally preceded by an id and a
// colon (`2026-06:BASE64`); without one the id is a fingerprint of the key
// (`k` and 16 hex digits of a SHA-256), which reveals nothing of it. Blank
// lines and lines starting with # are skipped. The first key encrypts new
// payloads; all of them decrypt, so a key is rotated by putting the new
// one first and removing the old one once no history needs it. source
// names where the text came from in errors, which never quote a key.
func ParseKeyring(source, text string) (*Keyring, error) {
	if len(text) > maxKeyringText {
		return nil, fmt.Errorf("reading payload keys from %s: %d bytes, more than a key ring holds (%d)", source, len(text), maxKeyringText)
	}
	r := &Keyring{byID: map[string]*key{}}
	var entries []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, e := range strings.Split(line, ",") {
			if e = strings.TrimSpace(e); e != "" {
				entries = append(entries, e)
			}
		}
	}
	for n, line := range entries {
		where := fmt.Sprintf("%s entry %d", source, n+1)
		id, material, named := strings.Cut(line, ":")
		if !named {
			id, material = "", line
		}
		raw, err := decodeKey(strings.TrimSpace(material))
		if err != nil {
			return nil, fmt.Errorf("reading payload keys: %s: %w", where, err)
		}
		id = strings.TrimSpace(id)
		if !named {
			id = Fingerprint(raw)
		} else if !validID.MatchString(id) {
			return nil, fmt.Errorf("reading payload keys: %s: key id %q: want 1 to 64 letters, digits, '.', '_' or '-'", where, id)
		}
		if r.byID[id] != nil {
			return nil, fmt.Errorf("reading payload keys: %s: key id %q appears twice", where, id)
		}
		aead, err := newAEAD(raw)
		if err != nil {
			return nil, fmt.Errorf("reading payload keys: %s: %w", where, err)
		}
		k := &key{id: id, aead: aead}
		r.keys = append(r.keys, k)
		r.byID[id] = k
	}
	if len(r.keys) == 0 {
		return nil, fmt.Errorf("reading payload keys from %s: no key in it (generate one with `sluice codec keygen`)", source)
	}
	return r, nil
}

// decodeKey reads base64 (standard or URL alphabet, padded or not) of
// exactly KeySize bytes. Its errors never quote the text.
func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("the key is %d bytes, want %d (base64 of 32 random bytes)", len(b), KeySize)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("the key (%d characters) is not base64", len(s))
}

// Fingerprint is the id of an unnamed key: `k` and 16 hex digits of a
// SHA-256 of a label and the key.
func Fingerprint(raw []byte) string {
	sum := sha256.Sum256(append([]byte("sluice payload key id\x00"), raw...))
	return "k" + hex.EncodeToString(sum[:8])
}

// ErrNoKey means neither SLUICE_CODEC_KEY nor SLUICE_CODEC_KEY_FILE (nor
// the file given) is set.
var ErrNoKey = errors.New("no payload key configured (set " + EnvKey + " or " + EnvKeyFile + ")")

// LoadKeyring reads the key ring from file (a flag's value, which
// defaults to $SLUICE_CODEC_KEY_FILE) or from $SLUICE_CODEC_KEY; both set
// is an error, neither is ErrNoKey. A key file readable by anyone but its
// owner is refused: the key opens every token Sluice keeps.
func LoadKeyring(file string) (*Keyring, error) {
	if file == "" {
		file = os.Getenv(EnvKeyFile)
	}
	env := os.Getenv(EnvKey)
	switch {
	case file != "" && strings.TrimSpace(env) != "":
		return nil, fmt.Errorf("reading payload keys: both %s and a key file (%s) are set: set one", EnvKey, file)
	case file != "":
		return ReadKeyFile(file)
	case strings.TrimSpace(env) != "":
		return ParseKeyring(EnvKey, env)
	}
	return nil, ErrNoKey
}

// ReadKeyFile reads a key ring file, which must be a regular file that
// only its owner can read or write (0600 or 0400).
func ReadKeyFile(path string) (*Keyring, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading payload keys: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("reading payload keys: %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("reading payload keys: %s has mode %04o; it must be readable by its owner only (chmod 600 %s)", path, perm, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading payload keys: %w", err)
	}
	return ParseKeyring(path, string(data))
}

// NewKey returns a new random key, base64-encoded, as a key ring line.
func NewKey() (string, error) {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generating a payload key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// EnsureKeyFile returns the key ring in path, first creating the file
// with one new key (mode 0600, its directory 0700) when it does not
// exist. created reports that it did. For `sluice dev`, whose data stays
// on one machine.
func EnsureKeyFile(path string) (r *Keyring, created bool, err error) {
	if _, err := os.Stat(path); err == nil {
		r, err := ReadKeyFile(path)
		return r, false, err
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("reading payload keys: %w", err)
	}
	line, err := NewKey()
	if err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, fmt.Errorf("creating payload key file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) { // another process created it first
			r, err := ReadKeyFile(path)
			return r, false, err
		}
		return nil, false, fmt.Errorf("creating payload key file: %w", err)
	}
	_, werr := f.WriteString("# Sluice payload key (sluice dev); the first key encrypts, every key decrypts.\n" + line + "\n")
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(path)
		return nil, false, fmt.Errorf("writing payload key file %s: %w", path, err)
	}
	r, err = ReadKeyFile(path)
	return r, err == nil, err
}

// IDs returns the key ids, the encrypting one first.
func (r *Keyring) IDs() []string {
	ids := make([]string, len(r.keys))
	for i, k := range r.keys {
		ids[i] = k.id
	}
	return ids
}

// PrimaryID is the id of the key that encrypts.
func (r *Keyring) PrimaryID() string { return r.primary().id }

func (r *Keyring) primary() *key { return r.keys[0] }

func (r *Keyring) describe() string { return "key ids " + strings.Join(r.IDs(), ", ") }

// String names the key ids, never the keys.
func (r *Keyring) String() string { return "keyring{" + strings.Join(r.IDs(), ",") + "}" }

// GoString is String: %#v must not print key material either.
func (r *Keyring) GoString() string { return r.String() }
