package status

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/watch"
)

// TestBadges: a provider's and a dataset's SVG badge say the state in
// its colour, as image/svg+xml that other sites may embed and caches may
// keep a minute; an unknown id is 404, and no id can inject markup.
func TestBadges(t *testing.T) {
	f := newFixture(t, nil)
	f.observe(t, "fred-dgs10", testNow.Add(-2*time.Hour), testNow.Add(-time.Hour), 10*time.Minute, watch.ProviderError, 503)
	f.observe(t, "ecos-722y001-0101000", testNow.Add(-3*time.Hour), testNow.Add(-time.Hour), 30*time.Minute, watch.OK, 200)
	for path, want := range map[string]watch.State{
		"/badge/fred.svg":                      watch.Down,
		"/badge/fred/fred-dgs10.svg":           watch.Down,
		"/badge/ecos/ecos-722y001-0101000.svg": watch.Up,
		"/badge/ecos.svg":                      watch.Up,
		"/badge/fred/fred-dgs2.svg":            watch.Unknown,
	} {
		r := f.get(t, path)
		if r.code != 200 || r.header.Get("Content-Type") != "image/svg+xml; charset=utf-8" || r.header.Get("Cache-Control") != badgeCache ||
			r.header.Get("Cross-Origin-Resource-Policy") != "cross-origin" || r.header.Get("ETag") == "" {
			t.Errorf("%s: %d %v", path, r.code, r.header)
			continue
		}
		var svg struct {
			XMLName xml.Name `xml:"http://www.w3.org/2000/svg svg"`
			Label   string   `xml:"aria-label,attr"`
			Rects   []struct {
				Fill string `xml:"fill,attr"`
			} `xml:"rect"`
			Texts []string `xml:"g>text"`
		}
		if err := xml.Unmarshal([]byte(r.body), &svg); err != nil {
			t.Errorf("%s: %v\n%s", path, err, r.body)
			continue
		}
		if len(svg.Texts) != 2 || svg.Texts[1] != string(want) || len(svg.Rects) != 2 || svg.Rects[1].Fill != badgeColours[want] {
			t.Errorf("%s: %+v, want %s", path, svg, want)
		}
		if strings.Contains(r.header.Get("Csp"), "unsafe") || !strings.Contains(r.header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%s: CSP %q", path, r.header.Get("Content-Security-Policy"))
		}
		if nm := f.get(t, path, "If-None-Match", r.header.Get("ETag")); nm.code != 304 || nm.body != "" {
			t.Errorf("%s with its ETag: %d", path, nm.code)
		}
	}
	for _, path := range []string{"/badge/nope.svg", "/badge/fred.png", "/badge/fred/nope.svg", "/badge/ecos/fred-dgs10.svg",
		"/badge/fred/%3Cscript%3Ealert(1)%3C%2Fscript%3E.svg", "/badge/%3Cscript%3E.svg", "/badge/fred/fred-dgs10"} {
		r := f.get(t, path)
		if r.code != 404 || strings.Contains(r.body, "<script>") || strings.HasPrefix(r.header.Get("Content-Type"), "image/") {
			t.Errorf("%s: %d %q", path, r.code, r.header.Get("Content-Type"))
		}
	}
	// Whatever the label, it is text: the SVG parses and holds it.
	label := `<script>alert("x")</script>&`
	var svg struct {
		Texts []string `xml:"g>text"`
		Title string   `xml:"title"`
	}
	if err := xml.Unmarshal(Badge(label, watch.Down), &svg); err != nil || svg.Texts[0] != label || svg.Title != label+": down" {
		t.Errorf("Badge(%q): %+v %v", label, svg, err)
	}
	if bytes.Contains(Badge(label, watch.Down), []byte("<script")) {
		t.Error("a label's markup reaches the SVG")
	}
}
