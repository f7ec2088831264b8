package registry

import (
	"fmt"
	"strings"
	"time"
)

// dateFormats are the layouts a {from:FORMAT} placeholder may ask for.
var dateFormats = map[string]string{
	"YYYYMMDD":   "20060102",
	"YYYY-MM-DD": "2006-01-02",
	"YYYYMM":     "200601",
	"YYYY":       "2006",
}

// Expand fills the {from}, {to} and {until} placeholders of a request
// parameter value with civil dates: {from} and {to} are the range's first
// and last day, {until} the day after {to}, for a provider whose end is
// exclusive (the FSC services' endBasDt). A placeholder may name a format
// after a colon: {from:YYYY-MM-DD}; the default is YYYYMMDD. Braces that
// are not a placeholder are an error, so a typo never reaches a provider.
func Expand(s string, from, to time.Time) (string, error) {
	if !strings.Contains(s, "{") && !strings.Contains(s, "}") {
		return s, nil
	}
	var b strings.Builder
	rest := s
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			if strings.Contains(rest, "}") {
				return "", fmt.Errorf("unmatched } in %q", s)
			}
			b.WriteString(rest)
			return b.String(), nil
		}
		if strings.Contains(rest[:open], "}") {
			return "", fmt.Errorf("unmatched } in %q", s)
		}
		b.WriteString(rest[:open])
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return "", fmt.Errorf("unclosed { in %q", s)
		}
		ph := rest[open+1 : open+end]
		name, format, hasFormat := strings.Cut(ph, ":")
		var d time.Time
		switch name {
		case "from":
			d = from
		case "to":
			d = to
		case "until":
			d = to.AddDate(0, 0, 1)
		default:
			return "", fmt.Errorf("unknown placeholder {%s} in %q (allowed: {from}, {to}, {until}, optionally with a format: {from:FORMAT})", ph, s)
		}
		layout := dateFormats["YYYYMMDD"]
		if hasFormat {
			l, ok := dateFormats[format]
			if !ok {
				return "", fmt.Errorf("unknown date format %q in {%s} (allowed: YYYYMMDD, YYYY-MM-DD, YYYYMM, YYYY)", format, ph)
			}
			layout = l
		}
		b.WriteString(d.Format(layout))
		rest = rest[open+end+1:]
	}
}
