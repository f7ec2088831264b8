package sink

import (
	"errors"
	"fmt"
	"mime"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrInvalidKey is wrapped by every error about a malformed key, key part or
// prefix, so callers can tell bad input from a failing store.
var ErrInvalidKey = errors.New("invalid lake key")

// MaxKeyLen is the longest key the sink accepts, S3's own limit.
const MaxKeyLen = 1024

// reservedPrefix is where the S3 sink stages multipart uploads before they
// are copied into place. No key may live under it and List never shows it.
const reservedPrefix = "_sluice/"

// KeySpec names one bronze object: what was fetched, for which logical
// dates, in which format.
type KeySpec struct {
	// Provider is the provider id, e.g. "kis".
	Provider string
	// Dataset is the dataset id, e.g. "kis_kospi_daily".
	Dataset string
	// From is the logical date of the data (the schedule's or backfill's
	// date). Only its calendar date, as read in its own location, counts.
	From time.Time
	// To is the last logical date of a range fetch. Zero or the same date
	// as From means a single day.
	To time.Time
	// Ext is the format of the raw bytes, e.g. "json" or "xml"; see
	// ExtForContentType.
	Ext string
}

// Key builds the lake key of the object spec names. It is the only place
// keys are made:
//
//	provider=<Provider>/job=<Dataset>/year=<YYYY>/<Dataset>_<YYYYMMDD>.<Ext>.zst
//	provider=<Provider>/job=<Dataset>/year=<YYYY>/<Dataset>_<YYYYMMDD>-<YYYYMMDD>.<Ext>.zst
//
// The second form is a range fetch, filed under the year of its first day.
// Provider and Dataset must be made of letters, digits, '_', '-' and '.'
// (not starting with '.', never ".."); Ext of lower-case letters and digits.
// Anything else, a zero From or a To before From is rejected with an error
// wrapping ErrInvalidKey.
func Key(spec KeySpec) (string, error) {
	if err := checkName("provider", spec.Provider); err != nil {
		return "", err
	}
	if err := checkName("dataset", spec.Dataset); err != nil {
		return "", err
	}
	if err := checkExt(spec.Ext); err != nil {
		return "", err
	}
	if spec.From.IsZero() {
		return "", fmt.Errorf("%w: dataset %q: missing logical date", ErrInvalidKey, spec.Dataset)
	}
	from := civil(spec.From)
	name := spec.Dataset + "_" + from.Format("20060102")
	if !spec.To.IsZero() {
		to := civil(spec.To)
		switch {
		case to.Before(from):
			return "", fmt.Errorf("%w: dataset %q: range ends %s before it starts %s",
				ErrInvalidKey, spec.Dataset, to.Format(time.DateOnly), from.Format(time.DateOnly))
		case to.After(from):
			name += "-" + to.Format("20060102")
		}
	}
	key := fmt.Sprintf("provider=%s/job=%s/year=%04d/%s.%s.zst",
		spec.Provider, spec.Dataset, from.Year(), name, spec.Ext)
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// civil returns t's calendar date as midnight UTC, so that dates compare
// and format the same whatever location t carries.
func civil(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// checkName validates a provider or dataset id used as one key segment.
func checkName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty %s", ErrInvalidKey, what)
	case len(s) > 128:
		return fmt.Errorf("%w: %s %q is longer than 128 bytes", ErrInvalidKey, what, s)
	case s[0] == '.':
		return fmt.Errorf("%w: %s %q starts with '.'", ErrInvalidKey, what, s)
	case strings.Contains(s, ".."):
		return fmt.Errorf("%w: %s %q contains \"..\"", ErrInvalidKey, what, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '_' && c != '-' && c != '.' {
			return fmt.Errorf("%w: %s %q contains %q (allowed: letters, digits, '_', '-', '.')",
				ErrInvalidKey, what, s, rune(c))
		}
	}
	return nil
}

func checkExt(s string) error {
	if s == "" || len(s) > 16 {
		return fmt.Errorf("%w: extension %q must be 1 to 16 characters", ErrInvalidKey, s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') {
			return fmt.Errorf("%w: extension %q must be lower-case letters and digits", ErrInvalidKey, s)
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isKeyByte reports whether c may appear in a key segment.
func isKeyByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '-' || c == '.' || c == '=' || c == '+'
}

// ValidateKey checks that key is a safe lake key: 1 to MaxKeyLen bytes of
// '/'-separated segments, each non-empty, not starting with '.' (which
// also rules out "." and ".."), made of letters, digits and "_-.=+", and
// not under the sink's reserved "_sluice/" prefix. Keys built by Key always
// pass. The error wraps ErrInvalidKey.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if err := checkPath(key, "key"); err != nil {
		return err
	}
	if strings.HasSuffix(key, "/") {
		return fmt.Errorf("%w: key %q ends with '/'", ErrInvalidKey, printable(key))
	}
	return nil
}

// ValidatePrefix checks a List prefix: empty (the whole lake), or the start
// of a key, following the rules of ValidateKey except that it may end with
// '/' or in the middle of a segment.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return checkPath(prefix, "prefix")
}

func checkPath(p, what string) error {
	if len(p) > MaxKeyLen {
		return fmt.Errorf("%w: %s is %d bytes, longer than %d", ErrInvalidKey, what, len(p), MaxKeyLen)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalidKey, what, printable(p))
	}
	if strings.HasPrefix(p, reservedPrefix) || p == strings.TrimSuffix(reservedPrefix, "/") {
		return fmt.Errorf("%w: %s %q is under the reserved prefix %q", ErrInvalidKey, what, p, reservedPrefix)
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		last := i == len(segs)-1
		if seg == "" {
			if last && what == "prefix" {
				continue // "a/b/" is a fine prefix
			}
			if i == 0 {
				return fmt.Errorf("%w: %s %q starts with '/'", ErrInvalidKey, what, printable(p))
			}
			if !last {
				return fmt.Errorf("%w: %s %q has an empty segment", ErrInvalidKey, what, printable(p))
			}
			continue // trailing '/' on a key is reported by ValidateKey
		}
		if seg[0] == '.' {
			return fmt.Errorf("%w: %s %q has segment %q starting with '.'", ErrInvalidKey, what, printable(p), printable(seg))
		}
		for j := 0; j < len(seg); j++ {
			if !isKeyByte(seg[j]) {
				return fmt.Errorf("%w: %s %q contains %q (allowed: letters, digits, \"_-.=+\" and '/')",
					ErrInvalidKey, what, printable(p), printable(string(seg[j:j+1])))
			}
		}
	}
	return nil
}

// printable bounds s for error messages, which quote it with %q.
func printable(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// ExtForContentType maps a response's Content-Type to the key extension:
// "json" for application/json, text/json and any "+json" type, "xml" for
// application/xml, text/xml and "+xml", "csv" for text/csv. Other types are
// an error: the caller must decide what the bytes are.
func ExtForContentType(contentType string) (string, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", fmt.Errorf("parsing content type %q: %w", contentType, err)
	}
	switch {
	case mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json"):
		return "json", nil
	case mt == "application/xml" || mt == "text/xml" || strings.HasSuffix(mt, "+xml"):
		return "xml", nil
	case mt == "text/csv":
		return "csv", nil
	}
	return "", fmt.Errorf("no lake extension for content type %q", mt)
}

// ParseKey reads back the KeySpec of a key Key built: provider, dataset,
// logical dates (To zero for one day) and extension. Any other key — a
// foreign object, a mistyped name — is an error wrapping ErrInvalidKey
// that says what does not fit. ParseKey(k) succeeds exactly when Key of
// its result is k again.
func ParseKey(key string) (KeySpec, error) {
	bad := func(why string) (KeySpec, error) {
		return KeySpec{}, fmt.Errorf("%w: %q is not a Sluice lake key (%s; want provider=P/job=D/year=YYYY/D_YYYYMMDD[-YYYYMMDD].EXT.zst)",
			ErrInvalidKey, printable(key), why)
	}
	segs := strings.Split(key, "/")
	if len(segs) != 4 {
		return bad(fmt.Sprintf("%d segments", len(segs)))
	}
	provider, ok1 := strings.CutPrefix(segs[0], "provider=")
	dataset, ok2 := strings.CutPrefix(segs[1], "job=")
	year, ok3 := strings.CutPrefix(segs[2], "year=")
	if !ok1 || !ok2 || !ok3 {
		return bad("segments must start provider=, job=, year=")
	}
	name, ok := strings.CutSuffix(segs[3], ".zst")
	if !ok {
		return bad("no .zst suffix")
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return bad("no extension")
	}
	name, ext := name[:dot], name[dot+1:]
	dates, ok := strings.CutPrefix(name, dataset+"_")
	if !ok {
		return bad("the file name does not start with the dataset")
	}
	spec := KeySpec{Provider: provider, Dataset: dataset, Ext: ext}
	fromS, toS, isRange := strings.Cut(dates, "-")
	var err error
	if spec.From, err = time.Parse("20060102", fromS); err != nil {
		return bad("the first date is not YYYYMMDD")
	}
	if isRange {
		if spec.To, err = time.Parse("20060102", toS); err != nil {
			return bad("the last date is not YYYYMMDD")
		}
	}
	if year != fmt.Sprintf("%04d", spec.From.Year()) {
		return bad("the year is not the first date's")
	}
	again, err := Key(spec)
	if err != nil {
		return bad(err.Error())
	}
	if again != key {
		return bad("it does not read back the same")
	}
	return spec, nil
}
