package connector

import (
	"cmp"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Redacted replaces every secret in URLs, messages and log lines.
const Redacted = "REDACTED"

// minSecretLen is the shortest value redacted by value: shorter strings
// would redact ordinary text and no real key is that short.
const minSecretLen = 4

// sensitiveParams are query parameter names (lower case) whose values are
// always redacted, whatever they hold.
var sensitiveParams = map[string]bool{
	"key": true, "servicekey": true, "service_key": true, "api_key": true, "apikey": true,
	"appkey": true, "app_key": true, "appsecret": true, "app_secret": true, "secret": true,
	"secret_key": true, "access_key": true, "client_secret": true,
	"token": true, "access_token": true, "refresh_token": true, "authorization": true,
}

// SensitiveParam reports whether a query parameter of this name carries a
// secret (key, serviceKey, ServiceKey, api_key, appkey, appsecret, token,
// access_token, …); the match ignores case.
func SensitiveParam(name string) bool { return sensitiveParams[strings.ToLower(name)] }

// RedactURL returns u with the values of sensitive query parameters, any
// path segment equal to one of secrets (the ECOS key) and any other
// occurrence of a secret (raw or percent-encoded) replaced by REDACTED,
// and a userinfo password dropped. Parameter order is kept.
func RedactURL(u string, secrets ...string) string {
	p, err := url.Parse(u)
	if err != nil {
		return redactQueryText(Redact(u, secrets...))
	}
	if p.User != nil {
		if _, has := p.User.Password(); has {
			p.User = url.UserPassword(p.User.Username(), Redacted)
		}
	}
	if p.RawQuery != "" {
		p.RawQuery = redactQuery(p.RawQuery)
	}
	if p.Path != "" {
		segs := strings.Split(p.EscapedPath(), "/")
		changed := false
		for i, s := range segs {
			un, err := url.PathUnescape(s)
			if err != nil {
				un = s
			}
			for _, sec := range secrets {
				if len(sec) >= minSecretLen && (un == sec || s == sec) {
					segs[i] = Redacted
					changed = true
					break
				}
			}
		}
		if changed {
			raw := strings.Join(segs, "/")
			if un, err := url.PathUnescape(raw); err == nil {
				p.Path, p.RawPath = un, raw
			}
		}
	}
	return Redact(p.String(), secrets...)
}

// redactQuery replaces the values of sensitive parameters in a raw query.
func redactQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, part := range parts {
		name, _, _ := strings.Cut(part, "=")
		n, err := url.QueryUnescape(name)
		if err != nil {
			n = name
		}
		if SensitiveParam(n) {
			parts[i] = name + "=" + Redacted
		}
	}
	return strings.Join(parts, "&")
}

// redactQueryText redacts sensitive parameters in text that did not parse
// as a URL: anything after the first '?'.
func redactQueryText(s string) string {
	before, q, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	frag := ""
	if i := strings.IndexByte(q, '#'); i >= 0 {
		q, frag = q[:i], q[i:]
	}
	return before + "?" + redactQuery(q) + frag
}

// Redact replaces every occurrence of each secret in s (raw, query-escaped
// and path-escaped) with REDACTED. Secrets shorter than four bytes are
// ignored.
func Redact(s string, secrets ...string) string {
	if len(secrets) == 0 || s == "" {
		return s
	}
	// Longest first, so that a secret containing another is replaced whole.
	sorted := slices.Clone(secrets)
	slices.SortFunc(sorted, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, sec := range sorted {
		if len(sec) < minSecretLen {
			continue
		}
		for _, form := range SecretForms(sec) {
			if strings.Contains(s, form) {
				s = strings.ReplaceAll(s, form, Redacted)
			}
		}
	}
	return s
}

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
		if len(v) >= minSecretLen && !slices.Contains(s.list, v) {
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

// Redact redacts every known secret in str.
func (s *Secrets) Redact(str string) string { return Redact(str, s.Values()...) }

// RedactURL redacts a URL (see RedactURL) with every known secret.
func (s *Secrets) RedactURL(u string) string { return RedactURL(u, s.Values()...) }

// SecretForms returns the spellings of a secret that Redact replaces: raw,
// query-escaped and path-escaped (JSON text spells these characters
// raw).
func SecretForms(s string) []string {
	forms := []string{s}
	for _, f := range []string{url.QueryEscape(s), url.PathEscape(s)} {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return forms
}
