package registry

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Finding kinds: what a person should check (확인 필요). Findings never fail
// loading.
const (
	FindingUnknown   = "unknown"   // a limit declared unknown; the conservative default applies
	FindingUnsourced = "unsourced" // a number with no source
	FindingStale     = "stale"     // a source verified longer ago than defaults.stale_after_days
	FindingNoTerms   = "no-terms"  // no terms_source, or terms declared unknown
	FindingTimezone  = "timezone"  // no timezone declared; UTC assumed
	FindingFuture    = "future"    // a verified_at date after today
	// FindingFreshness: a provider declares no freshness rule for a cycle
	// its probed datasets use; DefaultFreshness applies.
	FindingFreshness = "freshness"
)

// Finding is one item that needs checking by a person.
type Finding struct {
	Kind    string
	Subject string // provider id, scope instance id or dataset id
	Msg     string
	Pos     Pos
}

// String formats the finding as file:line: [kind] subject: message.
func (f Finding) String() string {
	return fmt.Sprintf("%s: [%s] %s: %s", f.Pos, f.Kind, f.Subject, f.Msg)
}

func (l *loader) collectFindings() {
	add := func(kind, subject string, pos Pos, format string, args ...any) {
		l.reg.Findings = append(l.reg.Findings, Finding{Kind: kind, Subject: subject, Msg: fmt.Sprintf(format, args...), Pos: pos})
	}
	l.reg.Findings = append(l.reg.Findings, l.decodeFindings...)
	staleBefore := l.now.Add(-time.Duration(l.reg.Defaults.StaleAfterDays) * 24 * time.Hour)
	stale := func(subject string, src *Source) {
		if src != nil && !src.VerifiedAt.IsZero() && src.VerifiedAt.Before(staleBefore) {
			days := int(l.now.Sub(src.VerifiedAt).Hours() / 24)
			add(FindingStale, subject, src.Pos, "verified_at %s is %d days old (stale after %d days): re-read %s",
				src.VerifiedAt.Format("2006-01-02"), days, l.reg.Defaults.StaleAfterDays, src.URL)
		}
	}
	for _, pr := range l.reg.Providers {
		if pr.TimezoneDefaulted {
			add(FindingTimezone, pr.ID, pr.Pos, "no timezone declared: daily quotas are assumed to reset at 00:00 UTC")
		}
		if pr.TermsSource == nil {
			add(FindingNoTerms, pr.ID, pr.Pos, "no terms_source: where were the terms of use read?")
		}
		stale(pr.ID+" terms", pr.TermsSource)
		termsUnknown(pr.ID, pr.Terms, pr.Pos, add)
		if missing := termsUndeclared(pr.Terms); len(missing) > 0 {
			add(FindingNoTerms, pr.ID, pr.Pos, "terms not declared: %s", strings.Join(missing, ", "))
		}
		for _, rl := range pr.RateLimits {
			subject := pr.ID + "/" + rl.Scope
			if rl.AllUnknown {
				add(FindingUnknown, subject, rl.Pos, "rate limits unknown: defaults.unknown_limits apply in full")
				continue
			}
			for _, w := range rl.Windows {
				if w.Unknown {
					if dw, ok := l.reg.Defaults.UnknownLimits.Window(w.Length); ok {
						add(FindingUnknown, subject, w.Pos, "%s unknown: the conservative default %d applies", w.Field, dw.Count)
					}
				}
			}
			if rl.MinIntervalUnknown {
				add(FindingUnknown, subject, rl.MinIntervalPos, "min_interval_seconds unknown: the default %s s applies", fmtSeconds(l.reg.Defaults.UnknownLimits.MinInterval))
			}
			if rl.Source == nil {
				add(FindingUnsourced, subject, rl.Pos, "limit declared without a source: add source {url, verified_at}")
			}
			stale(subject, rl.Source)
		}
	}
	l.freshnessFindings(add)
	for _, ds := range l.reg.Datasets {
		if !ds.Request.present {
			add(FindingUnknown, ds.ID, ds.Pos, "no request declared: the dataset can be neither probed nor ingested")
		}
		if ds.ScopeKeyDefaulted {
			add(FindingUnknown, ds.ID, ds.Pos, "no scope_key: counted in the shared budget %s/%s/%s with every other dataset that names none; name its service (활용신청)",
				ds.Provider, ScopeService, UnassignedScopeKey)
		}
		termsUnknown(ds.ID, ds.TermsOverride, ds.Pos, add)
	}
	sort.SliceStable(l.reg.Findings, func(i, j int) bool {
		a, b := l.reg.Findings[i].Pos, l.reg.Findings[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
}

// termsUndeclared lists the LicenseSpec fields a provider's terms leave
// out (pii_columns and note are optional statements, not gaps).
func termsUndeclared(t Terms) []string {
	var out []string
	if t.Type == "" {
		out = append(out, "type")
	}
	if t.CommercialUse == TriUnset {
		out = append(out, "commercial_use")
	}
	if t.AttributionRequired == TriUnset {
		out = append(out, "attribution_required")
	}
	if t.AttributionRequired == TriTrue && t.Attribution == "" {
		out = append(out, "attribution (required, but no text)")
	}
	if t.Redistribution == "" {
		out = append(out, "redistribution")
	}
	if t.ModificationAllowed == TriUnset {
		out = append(out, "modification_allowed")
	}
	return out
}

func termsUnknown(subject string, t Terms, pos Pos, add func(kind, subject string, pos Pos, format string, args ...any)) {
	var fields []string
	if t.CommercialUse == TriUnknown {
		fields = append(fields, "commercial_use")
	}
	if t.AttributionRequired == TriUnknown {
		fields = append(fields, "attribution_required")
	}
	if t.Redistribution == "unknown" {
		fields = append(fields, "redistribution")
	}
	if t.ModificationAllowed == TriUnknown {
		fields = append(fields, "modification_allowed")
	}
	for _, f := range fields {
		add(FindingNoTerms, subject, pos, "terms.%s unknown", f)
	}
}
