package sink

import (
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/internal/redact"
)

// redacted replaces secret values in URLs.
const redacted = redact.Marker

// maxSourceURLLen bounds the source URL kept in metadata: S3 allows 2 KB of
// user metadata in all.
const maxSourceURLLen = 1024

// RedactURL returns raw with secrets removed: the value of every query
// parameter whose name looks secret (key, serviceKey, api_key, token,
// appsecret, signature, password, …; parameters separated by '&' or ';',
// names percent-encoded or not) becomes "REDACTED", and so does a value
// that is itself an encoded URL holding such a parameter; user info is
// replaced and the fragment dropped. Other parameters keep their exact
// spelling. A URL that does not parse is not returned at all ("" with ok
// false), since its secrets cannot be found. Secrets in path segments
// (ECOS puts its key there) cannot be recognised by name: the caller
// redacts those by value.
func RedactURL(raw string) (clean string, ok bool) {
	if raw == "" {
		return "", true
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	u.Fragment, u.RawFragment = "", ""
	if u.User != nil {
		u.User = url.User(redacted)
	}
	if u.RawQuery != "" {
		u.RawQuery = redact.Query(u.RawQuery)
	}
	return u.String(), true
}

// cleanSourceURL redacts and bounds a source URL for metadata, and keeps it
// to printable ASCII so it is a valid S3 metadata value.
func cleanSourceURL(raw string) string {
	s, ok := RedactURL(raw)
	if !ok {
		return "(unparseable URL omitted)"
	}
	s = asciiOnly(s)
	if len(s) > maxSourceURLLen {
		s = truncate(s, maxSourceURLLen-3) + "..."
	}
	return s
}

// asciiOnly percent-encodes every byte outside printable ASCII.
func asciiOnly(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return percentEncode(s)
		}
	}
	return s
}

func percentEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
