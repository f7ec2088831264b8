package registry

import (
	"fmt"
	"io/fs"
	"math"
	"math/bits"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/wire"
)

// Defaults are the registry-wide settings of the `defaults` section.
type Defaults struct {
	// ProbeHeadroom multiplies the probes a day in the budget gate: room
	// for confirmation probes after a failure (docs/registry.md, "The registry's rules" 4: ×2).
	ProbeHeadroom int
	// StaleAfterDays is the age past which a source's verified_at is
	// reported as stale.
	StaleAfterDays int
	// UnknownLimits is the conservative limit applied to a window or
	// minimum interval declared as unknown: unknown is not unlimited.
	UnknownLimits RateLimit
	// MaxPagesPerCall bounds the pages one ingest follows: a provider that
	// announces more fails the ingest with a clear error rather than
	// looping (a provider that always says "more").
	MaxPagesPerCall int
	// LookBack is the look-back of a daily run by the unit of a dataset's
	// cycle, in periods (defaults.lookback_periods over DefaultLookBack).
	LookBack map[wire.Unit]int
	Pos      Pos
}

// DefaultMaxPagesPerCall is defaults.max_pages_per_call when not declared.
const DefaultMaxPagesPerCall = 1000

// builtinDefaults apply when providers.yaml has no defaults section (the
// minimal list form, docs/registry.md).
func builtinDefaults() Defaults {
	return Defaults{
		ProbeHeadroom:   2,
		StaleAfterDays:  180,
		MaxPagesPerCall: DefaultMaxPagesPerCall,
		LookBack:        defaultLookBack(),
		UnknownLimits: RateLimit{
			Windows: []Window{
				{Field: "requests_per_second", Length: time.Second, Count: 1},
				{Field: "requests_per_day", Length: 24 * time.Hour, Count: 1000},
			},
			MinInterval: time.Second,
		},
	}
}

type loader struct {
	fsys fs.FS
	name string
	now  time.Time
	errs Errors
	reg  *Registry
	// decodeFindings are findings made while decoding (future dates).
	decodeFindings []Finding
}

func (l *loader) file(p string) string { return path.Join(l.name, p) }

func (l *loader) load() (*Registry, error) {
	l.reg = &Registry{Defaults: builtinDefaults(), providers: map[string]*Provider{}, datasets: map[string]*Dataset{}}
	l.loadProviders()
	l.loadDatasets()
	parsed := len(l.errs) == 0
	l.crossCheck()
	l.buildScopes()
	l.everyDatasetScoped()
	l.budgetGate()
	l.collectFindings()
	if len(l.errs) > 0 {
		if !parsed {
			return nil, l.errs.sorted()
		}
		return l.reg, l.errs.sorted()
	}
	return l.reg, nil
}

func (l *loader) loadProviders() {
	const fname = "providers.yaml"
	file := l.file(fname)
	data, err := fs.ReadFile(l.fsys, fname)
	if err != nil {
		l.errs = append(l.errs, Problem{File: file, Msg: fmt.Sprintf("reading providers: %v", err)})
		return
	}
	before := len(l.errs)
	docs := parseYAML(data, file, &l.errs)
	if len(docs) == 0 {
		if len(l.errs) == before {
			l.errs = append(l.errs, Problem{File: file, Msg: "no providers declared"})
		}
		return
	}
	if len(docs) > 1 {
		l.errs = append(l.errs, Problem{File: file, Line: docs[1].Line, Msg: "expected one YAML document, found several"})
	}
	d := &decoder{file: file, errs: &l.errs, now: l.now, findings: &l.decodeFindings}
	root := deref(docs[0].Content[0])
	switch root.Kind {
	case yaml.SequenceNode:
		// The minimal form: a bare list of providers, built-in defaults.
		l.providerList(d, root, "")
	case yaml.MappingNode:
		present := d.mapping(root, "", []field{
			{"defaults", func(n *yaml.Node, p string) { l.defaults(d, n, p) }},
			{"providers", func(n *yaml.Node, p string) { l.providerList(d, n, p) }},
		})
		if present != nil && present["providers"] == nil {
			d.errorf(root, "", "missing field \"providers\"")
		}
	default:
		d.errorf(root, "", "expected a list of providers, or a mapping with defaults and providers; got %s", describe(root))
	}
}

func (l *loader) defaults(d *decoder, n *yaml.Node, path string) {
	def := builtinDefaults()
	def.Pos = d.pos(n, path)
	d.mapping(n, path, []field{
		{"probe_headroom", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, 100); ok {
				def.ProbeHeadroom = v
			}
		}},
		{"stale_after_days", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, 3650); ok {
				def.StaleAfterDays = v
			}
		}},
		{"max_pages_per_call", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, 100_000); ok {
				def.MaxPagesPerCall = v
			}
		}},
		{"lookback_periods", func(n *yaml.Node, p string) { lookBackDefaults(d, n, p, def.LookBack) }},
		{"unknown_limits", func(n *yaml.Node, p string) {
			rl := &RateLimit{Pos: d.pos(n, p)}
			fields := windowDecoders(d, rl)
			fields = append(fields, field{"min_interval_seconds", func(n *yaml.Node, p string) {
				if v, unknown, ok := d.seconds(n, p); ok {
					if unknown {
						d.errorf(n, p, "a default cannot be unknown: it is what unknown means")
						return
					}
					rl.MinInterval = v
					rl.MinIntervalPos = d.pos(n, p)
				}
			}})
			d.mapping(n, p, fields)
			for _, w := range rl.Windows {
				if w.Unknown {
					d.errorf(n, p+"."+w.Field, "a default cannot be unknown: it is what unknown means")
				}
			}
			if len(rl.Windows) == 0 && rl.MinInterval == 0 {
				d.errorf(n, p, "declares no limit: give at least one requests_per_* count")
			}
			def.UnknownLimits = *rl
		}},
	})
	l.reg.Defaults = def
}

func windowDecoders(d *decoder, rl *RateLimit) []field {
	var fields []field
	for _, wf := range windowFields {
		fields = append(fields, field{wf.name, func(n *yaml.Node, p string) {
			count, unknown, ok := d.countOrUnknown(n, p)
			if !ok {
				return
			}
			if wf.length < 24*time.Hour && count > MaxWindowCount {
				d.errorf(n, p, "%s %d is more than the limiter can keep: at most %d calls per window shorter than a day (it remembers one grant per call of the window)",
					wf.name, count, MaxWindowCount)
				return
			}
			rl.Windows = append(rl.Windows, Window{Field: wf.name, Length: wf.length, Count: count, Unknown: unknown, Pos: d.pos(n, p)})
		}})
	}
	return fields
}

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

func (l *loader) providerList(d *decoder, n *yaml.Node, path string) {
	d.sequence(n, path, func(_ int, item *yaml.Node, p string) {
		pr := l.provider(d, item, p)
		if pr == nil || pr.ID == "" {
			return
		}
		if prev, dup := l.reg.providers[pr.ID]; dup {
			d.errorf(item, p+".id", "duplicate provider id %q (first declared at %s)", pr.ID, prev.Pos)
			return
		}
		l.reg.providers[pr.ID] = pr
		l.reg.Providers = append(l.reg.Providers, pr)
	})
}

func (l *loader) provider(d *decoder, n *yaml.Node, path string) *Provider {
	pr := &Provider{Pos: d.pos(n, path)}
	var authNode *yaml.Node
	var authPath string
	present := d.mapping(n, path, []field{
		{"id", func(n *yaml.Node, p string) { pr.ID = d.id(n, p) }},
		{"name", func(n *yaml.Node, p string) { pr.Name = d.str(n, p) }},
		{"base_url", func(n *yaml.Node, p string) { pr.BaseURL = strings.TrimRight(d.url(n, p), "/") }},
		{"timezone", func(n *yaml.Node, p string) {
			tz := d.str(n, p)
			if tz == "" {
				return
			}
			loc, err := time.LoadLocation(tz)
			if err != nil || tz == "Local" {
				d.errorf(n, p, "unknown timezone %q: expected an IANA name such as Asia/Seoul or UTC", truncate(tz, 60))
				return
			}
			pr.Timezone, pr.Location = tz, loc
		}},
		{"connector", func(n *yaml.Node, p string) { pr.Connector = connectorName(d, n, p) }},
		{"auth", func(n *yaml.Node, p string) { authNode, authPath = n, p }},
		{"rate_limits", func(n *yaml.Node, p string) { l.rateLimits(d, pr, n, p) }},
		{"terms", func(n *yaml.Node, p string) { pr.Terms = d.terms(n, p) }},
		{"terms_source", func(n *yaml.Node, p string) { pr.TermsSource = d.source(n, p) }},
		{"bounds", func(n *yaml.Node, p string) { pr.boundsDecl = d.bounds(n, p) }},
		{"freshness", func(n *yaml.Node, p string) { pr.Freshness = d.freshness(n, p) }},
		{"notice", func(n *yaml.Node, p string) { pr.Notice = d.notice(n, p) }},
		{"maintenance", func(n *yaml.Node, p string) { pr.Maintenance = d.maintenance(n, p) }},
	})
	if present == nil {
		return nil
	}
	if present["id"] == nil {
		d.errorf(n, path, "missing field \"id\"")
		return nil
	}
	if pr.ID == "" {
		return nil
	}
	if present["rate_limits"] == nil {
		d.errorf(n, path, "provider %q declares no rate_limits: declare them, or write `rate_limits: unknown` so the conservative defaults apply", pr.ID)
	}
	if pr.Name == "" {
		pr.Name = pr.ID
	}
	if pr.Connector == "" {
		if _, known := wire.Lookup(pr.ID); known {
			pr.Connector = pr.ID
		}
	}
	if pr.Location == nil {
		pr.Timezone, pr.Location, pr.TimezoneDefaulted = "UTC", time.UTC, present["timezone"] == nil
	}
	pr.Auth = l.auth(d, pr.ID, authNode, authPath)
	pr.Bounds = DefaultBounds().Merge(pr.boundsDecl.Bounds)
	checkBounds(d.errs, pr.Bounds, pr.boundsDecl, "provider "+pr.ID)
	return pr
}

func (l *loader) auth(d *decoder, providerID string, n *yaml.Node, path string) Auth {
	a := Auth{Strategy: AuthNone, Credentials: map[string]string{}}
	strategies := sortedKeys(authRoles)
	if n != nil {
		n = deref(n)
		if n.Kind == yaml.ScalarNode {
			a.Strategy = d.oneOf(n, path, strategies)
		} else {
			var credNode *yaml.Node
			var credPath string
			present := d.mapping(n, path, []field{
				{"strategy", func(n *yaml.Node, p string) { a.Strategy = d.oneOf(n, p, strategies) }},
				{"param", func(n *yaml.Node, p string) { a.Param = d.str(n, p) }},
				{"credentials", func(n *yaml.Node, p string) { credNode, credPath = n, p }},
			})
			if present != nil && present["strategy"] == nil {
				d.errorf(n, path, "missing field \"strategy\" (allowed: %s)", strings.Join(strategies, ", "))
			}
			if credNode != nil && a.Strategy != "" {
				var fields []field
				for _, role := range authRoles[a.Strategy] {
					fields = append(fields, field{role, func(n *yaml.Node, p string) {
						v := d.str(n, p)
						if v == "" {
							return
						}
						if !envName.MatchString(v) {
							d.errorf(n, p, "%q is not an environment variable name (A-Z, 0-9, _): the registry holds credential names, never their values", truncate(v, 8))
							return
						}
						a.Credentials[role] = v
					}})
				}
				d.mapping(credNode, credPath, fields)
			}
			if a.Param != "" && defaultAuthParam[a.Strategy] == "" {
				d.errorf(n, path+".param", "param applies only to %s and %s", AuthAPIKeyQuery, AuthServiceKey)
			}
		}
	}
	if a.Strategy == "" {
		a.Strategy = AuthNone
	}
	if a.Param == "" {
		a.Param = defaultAuthParam[a.Strategy]
	}
	prefix := strings.ToUpper(strings.ReplaceAll(providerID, "-", "_"))
	for _, role := range authRoles[a.Strategy] {
		if a.Credentials[role] == "" {
			a.Credentials[role] = prefix + "_" + strings.ToUpper(role)
		}
	}
	return a
}

func (l *loader) rateLimits(d *decoder, pr *Provider, n *yaml.Node, path string) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Value == "unknown" {
		pr.RateLimits = append(pr.RateLimits, &RateLimit{Scope: ScopeKey, AllUnknown: true, Pos: d.pos(n, path)})
		return
	}
	if n.Kind == yaml.SequenceNode && len(n.Content) == 0 {
		d.errorf(n, path, "provider %q declares an empty list: its datasets would be called with no permit at all; declare its limits, or write `rate_limits: unknown` so the conservative defaults apply", pr.ID)
		return
	}
	seen := map[string]Pos{}
	d.sequence(n, path, func(_ int, item *yaml.Node, p string) {
		rl := &RateLimit{Pos: d.pos(item, p)}
		fields := []field{
			{"scope", func(n *yaml.Node, p string) { rl.Scope = d.oneOf(n, p, scopeValues) }},
			{"min_interval_seconds", func(n *yaml.Node, p string) {
				if v, unknown, ok := d.seconds(n, p); ok {
					rl.MinInterval, rl.MinIntervalUnknown, rl.MinIntervalPos = v, unknown, d.pos(n, p)
				}
			}},
			{"source", func(n *yaml.Node, p string) { rl.Source = d.source(n, p) }},
			{"note", func(n *yaml.Node, p string) { rl.Note = d.str(n, p) }},
		}
		fields = append(fields, windowDecoders(d, rl)...)
		present := d.mapping(item, p, fields)
		if present == nil {
			return
		}
		if present["scope"] == nil {
			d.errorf(item, p, "missing field \"scope\" (allowed: %s)", strings.Join(scopeValues, ", "))
			return
		}
		if rl.Scope == "" {
			return
		}
		declared := present["min_interval_seconds"] != nil
		for _, wf := range windowFields {
			declared = declared || present[wf.name] != nil
		}
		if !declared {
			d.errorf(item, p, "scope %s declares no limit: give requests_per_second, _minute, _hour or _day (a number, or unknown)", rl.Scope)
			return
		}
		if len(rl.Windows) == 0 && rl.MinInterval == 0 && !rl.MinIntervalUnknown {
			return // every value was invalid, and each is reported
		}
		if prev, dup := seen[rl.Scope]; dup {
			d.errorf(item, p+".scope", "scope %s declared twice for provider %s (first at line %d): put all its windows in one entry", rl.Scope, pr.ID, prev.Line)
			return
		}
		seen[rl.Scope] = rl.Pos
		// A count per window that a minimum interval makes impossible is
		// a contradiction in the declaration.
		if rl.MinInterval > 0 {
			for _, w := range rl.Windows {
				if w.Unknown {
					continue
				}
				most := int(math.Ceil(float64(w.Length) / float64(rl.MinInterval)))
				if w.Count > most {
					d.errorf(item, w.Pos.Path, "%s %d contradicts min_interval_seconds %s: at most %d call(s) fit in %s",
						w.Field, w.Count, fmtSeconds(rl.MinInterval), most, fmtDuration(w.Length))
				}
			}
		}
		pr.RateLimits = append(pr.RateLimits, rl)
	})
}

func (l *loader) loadDatasets() {
	entries, err := fs.ReadDir(l.fsys, "datasets")
	if err != nil {
		l.errs = append(l.errs, Problem{File: l.file("datasets"), Msg: fmt.Sprintf("reading datasets: %v", err)})
		return
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || (!strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml")) {
			continue
		}
		rel := path.Join("datasets", name)
		file := l.file(rel)
		data, err := fs.ReadFile(l.fsys, rel)
		if err != nil {
			l.errs = append(l.errs, Problem{File: file, Msg: fmt.Sprintf("reading dataset file: %v", err)})
			continue
		}
		docs := parseYAML(data, file, &l.errs)
		d := &decoder{file: file, errs: &l.errs, now: l.now, findings: &l.decodeFindings}
		for i, doc := range docs {
			root := deref(doc.Content[0])
			if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
				continue // an empty document, e.g. a trailing ---
			}
			prefix := ""
			if len(docs) > 1 {
				prefix = fmt.Sprintf("(document %d)", i+1)
			}
			ds := l.dataset(d, root, prefix)
			if ds == nil || ds.ID == "" {
				continue
			}
			if prev, dup := l.reg.datasets[ds.ID]; dup {
				d.errorf(root, join(prefix, "id"), "duplicate dataset id %q (first declared at %s)", ds.ID, prev.Pos)
				continue
			}
			l.reg.datasets[ds.ID] = ds
			l.reg.Datasets = append(l.reg.Datasets, ds)
		}
	}
	sort.Slice(l.reg.Datasets, func(i, j int) bool { return l.reg.Datasets[i].ID < l.reg.Datasets[j].ID })
}

func (l *loader) dataset(d *decoder, n *yaml.Node, path string) *Dataset {
	ds := &Dataset{Pos: d.pos(n, path)}
	var reqNode *yaml.Node
	var reqPath string
	present := d.mapping(n, path, []field{
		{"id", func(n *yaml.Node, p string) { ds.ID = d.id(n, p) }},
		{"name", func(n *yaml.Node, p string) { ds.Name = d.str(n, p) }},
		{"provider", func(n *yaml.Node, p string) { ds.Provider = d.str(n, p); ds.providerPos = d.pos(n, p) }},
		{"scope_key", func(n *yaml.Node, p string) {
			ds.scopeKeyPos = d.pos(n, p)
			if v, ok := d.scalar(n, p); ok {
				if v == "" || strings.ContainsAny(v, "/ \t") {
					d.errorf(n, p, "invalid scope_key %q: no spaces or slashes", truncate(v, 40))
					return
				}
				ds.ScopeKey = v
			}
		}},
		{"request", func(n *yaml.Node, p string) { reqNode, reqPath = n, p }},
		{"probe", func(n *yaml.Node, p string) {
			pr := &Probe{Pos: d.pos(n, p)}
			pres := d.mapping(n, p, []field{
				{"interval_minutes", func(n *yaml.Node, p string) {
					if v, ok := d.intValue(n, p, 1, 7*1440); ok {
						pr.IntervalMinutes = v
						pr.Pos = d.pos(n, p)
					}
				}},
				{"publication_lag_days", func(n *yaml.Node, p string) {
					if v, ok := d.days(n, p, maxPublicationLagDays); ok {
						pr.PublicationLag = v
					}
				}},
			})
			if pres != nil && pres["interval_minutes"] == nil {
				d.errorf(n, p, "missing field \"interval_minutes\"")
			}
			if pr.IntervalMinutes > 0 {
				ds.Probe = pr
			}
		}},
		{"ingest", func(n *yaml.Node, p string) { ds.Ingest = l.ingest(d, n, p) }},
		{"terms", func(n *yaml.Node, p string) { ds.TermsOverride = d.terms(n, p) }},
		{"rows", func(n *yaml.Node, p string) { ds.RowsOverride, ds.rowsPos = rowsOverride(d, n, p), d.pos(n, p) }},
		{"coverage", func(n *yaml.Node, p string) { ds.CoverageOverride, ds.coverageFields = coverageOverride(d, n, p) }},
		{"maintenance", func(n *yaml.Node, p string) { ds.Maintenance = d.maintenance(n, p) }},
		{"bounds", func(n *yaml.Node, p string) {
			ds.boundsDecl = d.bounds(n, p)
			ds.BoundsOverride = ds.boundsDecl.Bounds
		}},
	})
	if present == nil {
		return nil
	}
	for _, req := range []string{"id", "provider"} {
		if present[req] == nil {
			d.errorf(n, path, "missing field %q", req)
		}
	}
	if ds.ID == "" {
		return nil
	}
	if reqNode != nil {
		ds.Request = l.request(d, reqNode, reqPath)
	}
	ds.Request.reqPos = d.pos(reqNode, reqPath)
	ds.Request.present = present["request"] != nil
	return ds
}

func (l *loader) ingest(d *decoder, n *yaml.Node, path string) *Ingest {
	in := &Ingest{CallsPerRun: 1, Pos: d.pos(n, path)}
	present := d.mapping(n, path, []field{
		{"schedule", func(n *yaml.Node, p string) {
			s := d.str(n, p)
			if s == "" {
				return
			}
			if f := strings.Fields(s); len(f) > 0 && (strings.HasPrefix(f[0], "TZ=") || strings.HasPrefix(f[0], "CRON_TZ=")) {
				d.errorf(n, p, "schedule %q names a timezone: a dataset's schedule fires in its provider's timezone (providers.yaml timezone); remove %s", truncate(s, 60), truncate(f[0], 40))
				return
			}
			sched, err := cron.ParseStandard(s)
			if err != nil {
				d.errorf(n, p, "invalid cron schedule %q: %v (expected 5 fields: minute hour day-of-month month day-of-week, or @daily, @hourly, @every 6h)", truncate(s, 60), err)
				return
			}
			runs, ok := runsPerDay(sched)
			if !ok {
				d.errorf(n, p, "schedule %q fires more than once a minute", truncate(s, 60))
				return
			}
			in.Schedule, in.Cron, in.RunsPerDay = s, sched, runs
			in.Pos = d.pos(n, p)
		}},
		{"calls_per_run", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, 1_000_000); ok {
				in.CallsPerRun, in.callsDeclared, in.callsPos = v, true, d.pos(n, p)
			}
		}},
		{"lookback_periods", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, MaxLookBack); ok {
				in.LookBack, in.lookBackDeclared, in.lookBackPos = v, true, d.pos(n, p)
			}
		}},
	})
	if present == nil {
		return nil
	}
	if present["schedule"] == nil {
		d.errorf(n, path, "missing field \"schedule\"")
		return nil
	}
	if in.Cron == nil {
		return nil
	}
	return in
}

// runsPerDay is the most times a schedule fires on any one day.
func runsPerDay(s cron.Schedule) (int, bool) {
	switch s := s.(type) {
	case *cron.SpecSchedule:
		const star = 1 << 63
		secs := bits.OnesCount64(s.Second &^ star)
		if secs > 1 {
			return 0, false
		}
		return bits.OnesCount64(s.Hour&^star) * bits.OnesCount64(s.Minute&^star), true
	case cron.ConstantDelaySchedule:
		if s.Delay < time.Minute {
			return 0, false
		}
		return int(math.Ceil(float64(24*time.Hour) / float64(s.Delay))), true
	}
	return 0, false
}

func (l *loader) request(d *decoder, n *yaml.Node, path string) Request {
	var r Request
	d.mapping(n, path, []field{
		{"method", func(n *yaml.Node, p string) { r.Method = d.oneOf(n, p, []string{"GET", "POST"}) }},
		{"path", func(n *yaml.Node, p string) {
			r.Path = d.str(n, p)
			if r.Path != "" && (!strings.HasPrefix(r.Path, "/") || strings.Contains(r.Path, "..") || strings.ContainsAny(r.Path, "?# ")) {
				d.errorf(n, p, "invalid path %q: expected an absolute path such as /uapi/…, without query, fragment, spaces or ..", truncate(r.Path, 80))
				r.Path = ""
			}
		}},
		{"tr_id", func(n *yaml.Node, p string) { r.TrID = d.str(n, p) }},
		{"params", func(n *yaml.Node, p string) { r.Params, r.paramLines = l.params(d, n, p) }},
		{"stat_code", func(n *yaml.Node, p string) { r.StatCode = d.str(n, p) }},
		{"cycle", func(n *yaml.Node, p string) { r.Cycle = d.str(n, p) }}, // checked against the connector's cycles
		{"items", func(n *yaml.Node, p string) {
			r.Items = d.strList(n, p)
			if len(r.Items) > 4 {
				d.errorf(n, p, "at most 4 item codes, got %d", len(r.Items))
			}
		}},
		{"series_id", func(n *yaml.Node, p string) { r.SeriesID = d.str(n, p) }},
		{"market", func(n *yaml.Node, p string) { r.Market = d.str(n, p) }},
		{"format", func(n *yaml.Node, p string) { r.Format = d.oneOf(n, p, []string{"json", "xml"}) }},
		{"page_size", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, 100_000); ok {
				r.PageSize = v
			}
		}},
		{"paging", func(n *yaml.Node, p string) { r.Paging = d.oneOf(n, p, []string{PagingAll, PagingFirstPage}) }},
	})
	r.fields = map[string]int{}
	if nn := deref(n); nn.Kind == yaml.MappingNode {
		for i := 0; i < len(nn.Content); i += 2 {
			r.fields[nn.Content[i].Value] = nn.Content[i].Line
		}
	}
	if r.Method == "" {
		r.Method = "GET"
	}
	if r.Format == "" {
		r.Format = "json"
	}
	return r
}

func (l *loader) params(d *decoder, n *yaml.Node, path string) ([]Param, map[string]int) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "expected a mapping of parameter names to values, got %s", describe(n))
		return nil, nil
	}
	var out []Param
	lines := map[string]int{}
	seen := map[string]bool{}
	epoch := time.Date(2000, 1, 2, 0, 0, 0, 0, time.UTC)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		p := join(path, k.Value)
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			d.errorf(k, path, "expected a parameter name, got %s", describe(k))
			continue
		}
		if seen[k.Value] {
			d.errorf(k, p, "duplicate parameter %q", k.Value)
			continue
		}
		seen[k.Value] = true
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			d.errorf(v, p, "expected a value, got %s", describe(v))
			continue
		}
		if _, err := Expand(v.Value, epoch, epoch); err != nil {
			d.errorf(v, p, "%v", err)
			continue
		}
		out = append(out, Param{Name: k.Value, Value: v.Value})
		lines[k.Value] = k.Line
	}
	return out, lines
}

// crossCheck resolves references between files: dataset → provider,
// request fields → connector, scope keys → service scopes, terms.
func (l *loader) crossCheck() {
	var ids []string
	for _, p := range l.reg.Providers {
		ids = append(ids, p.ID)
	}
	for _, ds := range l.reg.Datasets {
		d := &decoder{file: ds.Pos.File, errs: &l.errs, now: l.now}
		pr := l.reg.providers[ds.Provider]
		if pr == nil {
			if ds.Provider != "" {
				l.errs = append(l.errs, Problem{File: ds.Pos.File, Line: ds.providerPos.Line, Path: ds.providerPos.Path,
					Msg: fmt.Sprintf("dataset %q names provider %q, which providers.yaml does not declare (declared: %s)", ds.ID, ds.Provider, strings.Join(ids, ", "))})
			}
			continue
		}
		ds.Terms = pr.Terms.Merge(ds.TermsOverride)
		ds.Bounds = pr.Bounds.Merge(ds.BoundsOverride)
		if pr.Bounds.ObjectBytes >= pr.Bounds.PageBytes {
			checkBounds(&l.errs, ds.Bounds, ds.boundsDecl, "dataset "+ds.ID)
		}
		if pr.ServiceScoped() && ds.ScopeKey == "" {
			// Conservative: every dataset that does not name its service
			// shares one budget, reported as needing checking.
			ds.ScopeKey, ds.ScopeKeyDefaulted = UnassignedScopeKey, true
		}
		if !pr.ServiceScoped() && ds.ScopeKey != "" {
			d.errorf(&yaml.Node{Line: ds.scopeKeyPos.Line}, ds.scopeKeyPos.Path, "scope_key %q given, but provider %s declares no scope service limit", ds.ScopeKey, pr.ID)
		}
		l.checkRequest(ds, pr)
		l.resolveIngest(ds, pr)
	}
}

func (l *loader) checkRequest(ds *Dataset, pr *Provider) {
	r := ds.Request
	if !r.present {
		// A dataset may be registered for its terms alone (the minimal
		// form, docs/registry.md); it cannot then be probed or ingested.
		for _, what := range []struct {
			set bool
			pos Pos
		}{{ds.Probe != nil, posOf(ds.Probe)}, {ds.Ingest != nil, posOfIngest(ds.Ingest)}} {
			if what.set {
				l.errs = append(l.errs, Problem{File: ds.Pos.File, Line: what.pos.Line, Path: what.pos.Path,
					Msg: fmt.Sprintf("dataset %q is probed or ingested but declares no request: add request with what the %s connector needs", ds.ID, connectorOf(pr))})
			}
		}
		return
	}
	// The connector declares the fields it uses (wire.Spec, registered
	// by the connector package); a connector not linked into this program
	// is not checked.
	spec, known := wire.Lookup(pr.Connector)
	if !known {
		return
	}
	path, line := r.reqPos.Path, r.reqPos.Line
	problem := func(line int, p, format string, args ...any) {
		l.errs = append(l.errs, Problem{File: ds.Pos.File, Line: line, Path: p, Msg: fmt.Sprintf(format, args...)})
	}
	allowed := map[string]bool{}
	for _, f := range spec.Fields.Allowed {
		allowed[f] = true
	}
	// request.paging (all pages or the first only) is the registry's own
	// field: it applies to every connector that pages.
	if spec.Paging.Style != "" {
		allowed["paging"] = true
	}
	bad := false
	for _, f := range sortedKeys(r.fields) {
		if !allowed[f] {
			bad = true
			problem(r.fields[f], join(path, f), "field %q is not used by the %s connector (it uses: %s)", f, pr.Connector, strings.Join(spec.Fields.Allowed, ", "))
		}
	}
	for _, f := range spec.Fields.Required {
		if _, ok := r.fields[f]; !ok {
			bad = true
			problem(line, path, "dataset %q: the %s connector needs request.%s", ds.ID, pr.Connector, f)
		}
	}
	if r.PageSize > 0 && spec.Paging.MaxRows > 0 && r.PageSize > spec.Paging.MaxRows {
		bad = true
		problem(r.fields["page_size"], join(path, "page_size"), "%d rows a page is more than the %s connector allows in one call (%d)", r.PageSize, pr.Connector, spec.Paging.MaxRows)
	}
	cycle, cycleLine, cyclePath := "", 0, ""
	switch f := spec.Dates.CycleField; {
	case f == "cycle":
		cycle, cycleLine, cyclePath = r.Cycle, r.fields["cycle"], join(path, "cycle")
	case strings.HasPrefix(f, "params."):
		name := strings.TrimPrefix(f, "params.")
		cycle, _ = r.Param(name)
		cycleLine, cyclePath = r.paramLines[name], join(path, "params."+name)
	}
	if _, err := spec.Cycle(cycle); err != nil {
		bad = true
		problem(cycleLine, cyclePath, "%v", err)
	}
	if bad {
		return
	}
	facts, err := spec.Resolve(cycle, r.PageSize, span(spec, r), ds.RowsOverride)
	if err != nil {
		problem(line, path, "%v", err)
		return
	}
	facts.Coverage = spec.Coverage.Override(ds.CoverageOverride).Resolved(facts.Cycle.Unit)
	ds.Wire = &facts
	l.checkCoverage(ds, spec)
}

// connectorOf names a provider's connector in messages: the declared or
// defaulted one, else the provider id (which a linked connector of that
// name would serve).
func connectorOf(pr *Provider) string {
	if pr.Connector != "" {
		return pr.Connector
	}
	return pr.ID
}

// span is how much of a range one call of r asks for: for a connector
// whose dates are the dataset's {from}/{to} parameters, a range with
// both, one period with {from} alone, nothing with neither.
func span(spec *wire.Spec, r Request) wire.Span {
	if !spec.Dates.InParams {
		return wire.SpanRange
	}
	from, to := false, false
	for _, p := range r.Params {
		from = from || strings.Contains(p.Value, "{from")
		to = to || strings.Contains(p.Value, "{to") || strings.Contains(p.Value, "{until")
	}
	switch {
	case from && to:
		return wire.SpanRange
	case from || to:
		return wire.SpanSingle
	}
	return wire.SpanNone
}

// connectorName reads a provider's connector: one of the connectors
// linked into the program.
func connectorName(d *decoder, n *yaml.Node, path string) string {
	linked := wire.Registered()
	if len(linked) > 0 {
		return d.oneOf(n, path, linked)
	}
	s := d.str(n, path)
	if s != "" {
		d.errorf(n, path, "invalid value %q: no connector is linked into this program (import github.com/sluicehq/sluice/connector/all)", truncate(s, 40))
	}
	return ""
}

// rowsOverride reads a dataset's rows block: the row facts that differ
// from its connector's.
func rowsOverride(d *decoder, n *yaml.Node, path string) wire.Override {
	var o wire.Override
	formats := make([]string, len(wire.Formats))
	for i, f := range wire.Formats {
		formats[i] = string(f)
	}
	d.mapping(n, path, []field{
		{"json", func(n *yaml.Node, p string) { o.JSON = d.str(n, p) }},
		{"xml", func(n *yaml.Node, p string) { o.XML = d.str(n, p) }},
		{"period", func(n *yaml.Node, p string) { o.Period = d.str(n, p) }},
		{"period_format", func(n *yaml.Node, p string) { o.PeriodFormat = wire.Format(d.oneOf(n, p, formats)) }},
		{"keys", func(n *yaml.Node, p string) { o.Keys = nonNil(d.strList(n, p)) }},
		{"values", func(n *yaml.Node, p string) {
			o.Values = nonNil(d.strList(n, p))
			if len(o.Values) == 0 {
				d.errorf(n, p, "name at least one value field")
			}
		}},
	})
	return o
}

// coverageOverride reads a dataset's coverage block (wire.Coverage): the
// fields it declares, with where.
func coverageOverride(d *decoder, n *yaml.Node, path string) (wire.CoverageOverride, map[string]Pos) {
	var o wire.CoverageOverride
	at := map[string]Pos{}
	units := make([]string, len(wire.Units))
	for i, u := range wire.Units {
		units[i] = string(u)
	}
	d.mapping(n, path, []field{
		{"align", func(n *yaml.Node, p string) {
			o.Align, at["align"] = wire.Unit(d.oneOf(n, p, units)), d.pos(n, p)
		}},
		{"periods", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, wire.MaxCoveragePeriods); ok {
				o.Periods, at["periods"] = v, d.pos(n, p)
			}
		}},
		{"rows_per_period", func(n *yaml.Node, p string) {
			if v, ok := d.intValue(n, p, 1, MaxRowsPerPeriod); ok {
				o.RowsPerPeriod, at["rows_per_period"] = v, d.pos(n, p)
			}
		}},
		{"weekdays", func(n *yaml.Node, p string) {
			if v, ok := d.boolValue(n, p); ok {
				o.Weekdays, at["weekdays"] = &v, d.pos(n, p)
			}
		}},
	})
	return o, at
}

// MaxRowsPerPeriod bounds a dataset's coverage.rows_per_period.
const MaxRowsPerPeriod = 1_000_000

// checkCoverage refuses a coverage no chunk can be served by: an align
// finer than the dataset's cycle (a chunk would split a period), or a
// chunk whose rows take more pages than one ingest may follow.
func (l *loader) checkCoverage(ds *Dataset, spec *wire.Spec) {
	f := ds.Wire
	c := f.Coverage
	pos := func(field string) Pos {
		if p, ok := ds.coverageFields[field]; ok {
			return p
		}
		return Pos{File: ds.Pos.File, Line: ds.Pos.Line, Path: ds.Pos.Path}
	}
	problem := func(p Pos, format string, args ...any) {
		l.errs = append(l.errs, Problem{File: ds.Pos.File, Line: p.Line, Path: p.Path, Msg: fmt.Sprintf(format, args...)})
	}
	cycle := f.Cycle.Unit
	if cycle == "" {
		cycle = wire.Day
	}
	if a := ds.CoverageOverride.Align; a != "" && !a.Holds(cycle) {
		problem(pos("align"), "coverage.align %s does not hold whole periods of the dataset's cycle (%s): a chunk would split one period; align to %s or a unit made of whole %ss",
			a, cycle, cycle, cycle)
		return
	}
	if f.Span != wire.SpanRange || ds.Request.FirstPageOnly() || f.PageRows <= 0 {
		return
	}
	most, _ := c.Align.Days()
	_, fewest := cycle.Days()
	days := c.Periods * most
	periods := (days+fewest-1)/fewest + 1
	rows := periods * c.RowsPerPeriod
	pages := (rows + f.PageRows - 1) / f.PageRows
	if max := l.reg.Defaults.MaxPagesPerCall; max > 0 && pages > max {
		field := "periods"
		if _, ok := ds.coverageFields["rows_per_period"]; ok {
			field = "rows_per_period"
		}
		problem(pos(field), "coverage: a chunk of %d %s of dataset %q holds up to %d rows, %d pages of %d rows, more than defaults.max_pages_per_call %d; align to a shorter unit or fewer periods",
			c.Periods, unitWord(c.Align, c.Periods), ds.ID, rows, pages, f.PageRows, max)
	}
}

// nonNil turns a nil list into an empty one: a declared empty keys list
// replaces the connector's.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func fmtSeconds(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", d.Seconds()), "0"), ".")
}

func fmtDuration(d time.Duration) string {
	w, ok := WindowWord(d)
	switch {
	case !ok:
		return w
	case d == time.Hour:
		return "an " + w
	}
	return "a " + w
}

// WindowWord names a rate window's length as its unit — "second",
// "minute", "hour" or "day" — and says whether it is one; any other
// length is spelled as a duration ("90s").
func WindowWord(d time.Duration) (string, bool) {
	switch d {
	case time.Second:
		return "second", true
	case time.Minute:
		return "minute", true
	case time.Hour:
		return "hour", true
	case 24 * time.Hour:
		return "day", true
	}
	return d.String(), false
}

func posOf(p *Probe) Pos {
	if p == nil {
		return Pos{}
	}
	return p.Pos
}

func posOfIngest(i *Ingest) Pos {
	if i == nil {
		return Pos{}
	}
	return i.Pos
}
