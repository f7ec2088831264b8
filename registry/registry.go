// Package registry loads and validates Sluice's version-controlled registry
// of providers and datasets (docs/registry.md).
//
// A registry is a directory holding providers.yaml (provider-level: base
// URL, timezone, auth strategy, rate limits with their sources, terms of
// use) and datasets/*.yaml (one or more datasets per file, as YAML documents
// separated by ---). Loading is strict: unknown fields, wrong types,
// duplicate ids, dangling references, bad dates and URLs are errors that
// name the file, line and YAML path, and every one is reported at once.
//
// Loading also runs the budget gate: for every scope instance (provider +
// scope + scope key) the daily demand of its datasets — probes a day times
// the probe headroom, plus scheduled ingest calls — must fit every declared
// limit. A registry that does not fit fails to load; it never warns.
//
// A Registry is immutable after loading and safe for concurrent use.
package registry

import (
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	// Provider timezones must resolve on machines without tzdata.
	_ "time/tzdata"

	"gopkg.in/yaml.v3"
)

//go:embed providers.yaml datasets
var defaultFS embed.FS

// DefaultName is how files of the embedded default registry are named in
// messages.
const DefaultName = "registry"

// Registry is a loaded, validated set of providers and datasets.
type Registry struct {
	Defaults  Defaults
	Providers []*Provider      // in file order
	Datasets  []*Dataset       // sorted by id
	Scopes    []*ScopeInstance // sorted by id
	// Findings are what a person should check: unknown limits, values
	// without a source, stale sources, assumed timezones. They never fail
	// loading.
	Findings []Finding

	providers map[string]*Provider
	datasets  map[string]*Dataset
}

// Options tune loading.
type Options struct {
	// Now is the clock for stale-source and future-date checks; nil means
	// time.Now.
	Now func() time.Time
}

// Default loads the registry embedded in the binary.
func Default(opts Options) (*Registry, error) {
	return Load(defaultFS, DefaultName, opts)
}

// DefaultFS returns the embedded default registry's files.
func DefaultFS() fs.FS { return defaultFS }

// LoadDir loads the registry in a directory.
func LoadDir(dir string, opts Options) (*Registry, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("loading registry: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("loading registry: %s is not a directory", dir)
	}
	return Load(os.DirFS(dir), path.Clean(strings.ReplaceAll(dir, `\`, "/")), opts)
}

// Load loads the registry whose root is fsys; name prefixes file names in
// messages. On failure the error is an Errors listing every problem. When
// the files parsed but the budget gate or cross-checks failed, the
// partially valid Registry is returned beside the error so that a report
// can show the demand table; never run anything from it.
func Load(fsys fs.FS, name string, opts Options) (*Registry, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	l := &loader{fsys: fsys, name: name, now: now().UTC()}
	return l.load()
}

// Provider returns the provider with the given id, or nil.
func (r *Registry) Provider(id string) *Provider { return r.providers[id] }

// Dataset returns the dataset with the given id, or nil.
func (r *Registry) Dataset(id string) *Dataset { return r.datasets[id] }

// DatasetsOf returns the datasets of a provider, sorted by id.
func (r *Registry) DatasetsOf(provider string) []*Dataset {
	var out []*Dataset
	for _, d := range r.Datasets {
		if d.Provider == provider {
			out = append(out, d)
		}
	}
	return out
}

// ScopesFor returns the scope instances a dataset's calls count against:
// one per rate limit of its provider.
func (r *Registry) ScopesFor(datasetID string) []*ScopeInstance {
	var out []*ScopeInstance
	for _, s := range r.Scopes {
		for _, d := range s.Datasets {
			if d.ID == datasetID {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// Scope returns the scope instance with the given id, or nil.
func (r *Registry) Scope(id string) *ScopeInstance {
	i := sort.Search(len(r.Scopes), func(i int) bool { return r.Scopes[i].ID >= id })
	if i < len(r.Scopes) && r.Scopes[i].ID == id {
		return r.Scopes[i]
	}
	return nil
}

// parseYAML decodes every document of a file into nodes; a syntax error is
// reported with its line.
func parseYAML(data []byte, file string, errs *Errors) []*yaml.Node {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			*errs = append(*errs, yamlProblem(file, err))
			break
		}
		docs = append(docs, &n)
	}
	return docs
}

// yamlProblem turns a yaml.v3 syntax error ("yaml: line 3: …") into a
// Problem carrying the line.
func yamlProblem(file string, err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.IndexByte(rest, ':'); i > 0 {
			fmt.Sscanf(rest[:i], "%d", &line)
			msg = strings.TrimSpace(rest[i+1:])
		}
	}
	return Problem{File: file, Line: line, Msg: "invalid YAML: " + msg}
}
