package newprovider_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// toyCounterpart is where the toy keeps each file of docs/providers.md's
// list: its folders in testdata/toy, laid out as a real provider's; its
// tests in this package; its two linking lines as this package's imports;
// docs/providers.md itself, which a throwaway provider does not edit.
var toyCounterpart = map[string]string{
	"registry/providers.yaml":           "testdata/toy/registry/providers.yaml",
	"registry/datasets/<p>.yaml":        "testdata/toy/registry/datasets/toy.yaml",
	"connector/<p>/<p>.go":              "testdata/toy/connector/toy/toy.go",
	"connector/<p>/conformance_test.go": "e2e/newprovider/conformance_test.go",
	"simulator/<p>/<p>.go":              "testdata/toy/simulator/toy/toy.go",
	"simulator/<p>/<p>_test.go":         "e2e/newprovider/simulator_test.go",
	"connector/all/all.go":              "import github.com/sluicehq/sluice/testdata/toy/connector/toy",
	"simulator/all/all.go":              "import github.com/sluicehq/sluice/testdata/toy/simulator/toy",
	"docs/providers.md":                 "docs/providers.md",
}

// TestRecipeListIsTheToy: the files docs/providers.md says a new provider
// touches are exactly the toy's — each one has its counterpart, the toy
// has no file the list does not name, and no entry is shared code.
func TestRecipeListIsTheToy(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "providers.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "\n## Adding a provider\n")
	if start < 0 {
		t.Fatal(`docs/providers.md has no "## Adding a provider" section`)
	}
	section := text[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	// The list's entries: a bold path and whether it is new or an edit.
	var listed []string
	for _, m := range regexp.MustCompile("\\*\\*`([^`]+)`\\*\\*(?: and \\d+\\. \\*\\*`([^`]+)`\\*\\*)? \\((new|edit)\\)").FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1])
		if m[2] != "" {
			listed = append(listed, m[2])
		}
	}
	var want []string
	for p := range toyCounterpart {
		want = append(want, p)
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(listed))
	if !slices.Equal(got, want) {
		t.Fatalf("docs/providers.md lists %q\nthe toy has counterparts of %q", got, want)
	}
	if n := len(listed); !strings.Contains(section, numberWord(n)+" files") {
		t.Errorf("the section does not say %q", numberWord(n)+" files")
	}
	imports, err := os.ReadFile("newprovider_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var toyFiles []string
	for _, p := range listed {
		c := toyCounterpart[p]
		if imp, ok := strings.CutPrefix(c, "import "); ok {
			if !strings.Contains(string(imports), `_ "`+imp+`"`) {
				t.Errorf("%s: the pipeline test does not import %s", p, imp)
			}
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(c))); err != nil {
			t.Errorf("%s: the toy's %s: %v", p, c, err)
		}
		if strings.HasPrefix(c, "testdata/toy/") {
			toyFiles = append(toyFiles, c)
		}
	}
	// The toy is nothing but the listed files.
	err = filepath.WalkDir(filepath.Join(root, "testdata", "toy"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !slices.Contains(toyFiles, rel) {
			t.Errorf("%s is part of the toy but not of docs/providers.md's list", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func numberWord(n int) string {
	words := []string{"Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Eleven", "Twelve"}
	if n < len(words) {
		return words[n]
	}
	return "Many"
}
