// Package lineagetest checks lineage events in tests: each event against
// the OpenLineage JSON schema vendored in lineage/testdata/openlineage,
// and each facet against the schema its _schemaURL names (the standard
// facets vendored beside it, Sluice's own in lineage/schema). No schema is
// fetched from the network: a facet naming one that is not here fails.
package lineagetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// coreSchema is the OpenLineage spec's id, the events' schema.
const coreSchema = "https://openlineage.io/spec/2-0-2/OpenLineage.json"

var (
	once     sync.Once
	compiler *jsonschema.Compiler
	core     *jsonschema.Schema
	loadErr  error
	mu       sync.Mutex // guards compiles on compiler
)

// load reads every schema under lineage/testdata/openlineage and
// lineage/schema into one compiler, each under its $id.
func load() {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		loadErr = fmt.Errorf("locating lineagetest's source")
		return
	}
	root := filepath.Dir(filepath.Dir(file)) // lineage/
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, dir := range []string{filepath.Join(root, "testdata", "openlineage"), filepath.Join(root, "schema")} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil || len(paths) == 0 {
			loadErr = fmt.Errorf("reading schemas in %s: %v (found %d)", dir, err, len(paths))
			return
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				loadErr = fmt.Errorf("reading schema: %w", err)
				return
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				loadErr = fmt.Errorf("parsing schema %s: %w", p, err)
				return
			}
			id, _ := doc.(map[string]any)["$id"].(string)
			if id == "" {
				loadErr = fmt.Errorf("schema %s: no $id", p)
				return
			}
			if err := c.AddResource(id, doc); err != nil {
				loadErr = fmt.Errorf("adding schema %s: %w", p, err)
				return
			}
		}
	}
	compiler = c
	core, loadErr = c.Compile(coreSchema)
}

// Validate checks one event, as JSON: against the OpenLineage schema, and
// each facet against the schema its _schemaURL names.
func Validate(event []byte) error {
	once.Do(load)
	if loadErr != nil {
		return loadErr
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(event))
	if err != nil {
		return fmt.Errorf("parsing event: %w", err)
	}
	if err := core.Validate(inst); err != nil {
		return fmt.Errorf("event against %s: %w", coreSchema, err)
	}
	var ev struct {
		Run struct {
			Facets map[string]json.RawMessage `json:"facets"`
		} `json:"run"`
		Job struct {
			Facets map[string]json.RawMessage `json:"facets"`
		} `json:"job"`
		Inputs []struct {
			Facets      map[string]json.RawMessage `json:"facets"`
			InputFacets map[string]json.RawMessage `json:"inputFacets"`
		} `json:"inputs"`
		Outputs []struct {
			Facets       map[string]json.RawMessage `json:"facets"`
			OutputFacets map[string]json.RawMessage `json:"outputFacets"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(event, &ev); err != nil {
		return fmt.Errorf("parsing event: %w", err)
	}
	all := []map[string]json.RawMessage{ev.Run.Facets, ev.Job.Facets}
	for _, in := range ev.Inputs {
		all = append(all, in.Facets, in.InputFacets)
	}
	for _, out := range ev.Outputs {
		all = append(all, out.Facets, out.OutputFacets)
	}
	for _, facets := range all {
		for name, raw := range facets {
			if err := validateFacet(name, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateFacet(name string, raw json.RawMessage) error {
	var head struct {
		SchemaURL string `json:"_schemaURL"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("facet %s: %w", name, err)
	}
	if !strings.Contains(head.SchemaURL, "#/$defs/") {
		return fmt.Errorf("facet %s: _schemaURL %q does not point at a definition", name, head.SchemaURL)
	}
	mu.Lock()
	sch, err := compiler.Compile(head.SchemaURL)
	mu.Unlock()
	if err != nil {
		return fmt.Errorf("facet %s: compiling %s: %w", name, head.SchemaURL, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("facet %s: %w", name, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("facet %s against %s: %w", name, head.SchemaURL, err)
	}
	return nil
}

// Lines returns the events of a JSON-lines file, failing the test when
// one is not a valid event.
func Lines(t testing.TB, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := bytes.Clone(sc.Bytes())
		if err := Validate(line); err != nil {
			t.Errorf("%s line %d: %v\n%s", path, len(out)+1, err, line)
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
