package connector

import (
	"slices"
	"sync"

	"github.com/sluicehq/sluice/internal/redact"
)

// Redacted replaces every secret in URLs, messages and log lines.
const Redacted = redact.Marker

// SensitiveParam reports whether a query parameter (or JSON member, XML
// element, header) of this name carries a secret: key, serviceKey,
// ServiceKey, api_key, appkey, appsecret, token, access_token,
// authorization, and any name containing key, token, secret, password,
// signature or credential; the match ignores case.
func SensitiveParam(name string) bool { return redact.SensitiveName(name) }

// RedactURL returns u with the values of sensitive query and fragment
// parameters (separated by '&' or ';', and values that are an encoded URL
// holding one), a userinfo password, and every occurrence of a secret —
// in a path segment (the ECOS key) or anywhere else, in any spelling
// (percent escapes of either case, encoded twice, '+' for a space,
// JSON-escaped, HTML references, base64) — replaced by REDACTED.
// Parameter order is kept. A URL that does not parse is redacted as text.
func RedactURL(u string, secrets ...string) string { return redact.URL(u, secrets...) }

// Redact replaces every secret in s with REDACTED, in any spelling (see
// RedactURL), and a secret cut off by the end of s or an ellipsis; and the
// values of sensitive parameters, JSON members, XML elements and headers,
// bearer tokens and JWTs whatever they hold. Secrets shorter than four
// bytes are ignored.
func Redact(s string, secrets ...string) string { return redact.Text(s, secrets...) }

// Secrets is a growing set of secret values to redact: keys when they are
// looked up, tokens when they are issued. Safe for concurrent use.
type Secrets struct {
	mu   sync.RWMutex
	list []string
}

// Add remembers values to redact; empty and short ones are ignored.
func (s *Secrets) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) >= redact.MinSecretLen && !slices.Contains(s.list, v) {
			s.list = append(s.list, v)
		}
	}
}

// Values returns a copy of the secrets.
func (s *Secrets) Values() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.list)
}

// Redact redacts every known secret in str (see Redact).
func (s *Secrets) Redact(str string) string { return Redact(str, s.Values()...) }

// RedactURL redacts a URL (see RedactURL) with every known secret.
func (s *Secrets) RedactURL(u string) string { return RedactURL(u, s.Values()...) }

// SecretForms returns literal spellings of a secret for tests to look
// for: raw, query- and path-escaped (upper- and lower-case escapes, and
// escaped twice), with '+' and spaces swapped, JSON-escaped and its base64
// parts. Redact replaces these and every mix of them.
func SecretForms(s string) []string { return redact.Forms(s) }
