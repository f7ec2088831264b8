package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// kvPassword matches a password setting of a key/value connection string
// (password=…, sslpassword=…, quoted or not).
var kvPassword = regexp.MustCompile(`(?i)(\b[a-z_]*password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']+)`)

// DSN returns a database connection string (a postgres:// URL or a
// key/value string) fit for messages: the user-info password, the values
// of sensitive query parameters (password, sslpassword, …) and of
// password settings, and every other spelling of those values, are
// replaced by Marker. It is the one redaction of connection strings; an
// error that may echo one goes through Error with DSNSecrets.
func DSN(dsn string) string {
	secrets := DSNSecrets(dsn)
	if i := strings.Index(dsn, "://"); i > 0 {
		if u, err := url.Parse(dsn); err == nil && u.Opaque == "" {
			return URL(dsn, secrets...)
		}
		// A URL that does not parse: drop its user info whole.
		rest := dsn[i+3:]
		if j := strings.LastIndex(rest, "@"); j >= 0 {
			dsn = dsn[:i+3] + Marker + rest[j:]
		}
		return Text(dsn, secrets...)
	}
	return Text(kvPassword.ReplaceAllString(dsn, "${1}"+Marker), secrets...)
}

// DSNSecrets returns the secret values a connection string holds: its
// user-info password, the values of its sensitive query parameters and
// its password settings, for Values and Error to find in text a driver
// wrote.
func DSNSecrets(dsn string) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	if i := strings.Index(dsn, "://"); i > 0 {
		if u, err := url.Parse(dsn); err == nil {
			if p, ok := u.User.Password(); ok {
				add(p)
			}
			for name, vals := range u.Query() {
				if SensitiveName(name) {
					for _, v := range vals {
						add(v)
					}
				}
			}
		} else {
			rest := dsn[i+3:]
			if j := strings.LastIndex(rest, "@"); j >= 0 {
				if _, p, ok := strings.Cut(rest[:j], ":"); ok {
					add(p)
				}
			}
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(dsn, -1) {
		v := m[2]
		if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = strings.ReplaceAll(strings.ReplaceAll(v[1:len(v)-1], `\'`, `'`), `\\`, `\`)
		}
		add(strings.TrimRight(v, "&"))
		if k := strings.IndexByte(v, '&'); k > 0 {
			add(v[:k]) // a URL's query: the value ends at the next parameter
		}
	}
	return out
}

// Error returns err itself when neither its message nor that of any error
// it unwraps to shows one of secrets (by Values); otherwise a new error
// with the redacted message and no cause, so that nothing unwrapping it
// (Temporal's failure converter records every cause) finds the secret.
func Error(err error, secrets ...string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	red := Values(msg, secrets...)
	if red == msg && !chainShows(err, secrets) {
		return err
	}
	return errors.New(red)
}

func chainShows(err error, secrets []string) bool {
	for err != nil {
		if m := err.Error(); Values(m, secrets...) != m {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if chainShows(e, secrets) {
					return true
				}
			}
			return false
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return false
		}
	}
	return false
}
