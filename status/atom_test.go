package status

import (
	"context"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/watch"
)

// feedEnvelope is an Atom feed as RFC 4287 lays it out, for reading our
// answers back: every element the RFC requires of a feed and an entry.
type feedEnvelope struct {
	XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string   `xml:"http://www.w3.org/2005/Atom id"`
	Title   string   `xml:"http://www.w3.org/2005/Atom title"`
	Updated string   `xml:"http://www.w3.org/2005/Atom updated"`
	Authors []struct {
		Name string `xml:"http://www.w3.org/2005/Atom name"`
	} `xml:"http://www.w3.org/2005/Atom author"`
	Links []struct {
		Rel  string `xml:"rel,attr"`
		Type string `xml:"type,attr"`
		Href string `xml:"href,attr"`
	} `xml:"http://www.w3.org/2005/Atom link"`
	Entries []struct {
		ID      string `xml:"http://www.w3.org/2005/Atom id"`
		Title   string `xml:"http://www.w3.org/2005/Atom title"`
		Updated string `xml:"http://www.w3.org/2005/Atom updated"`
		Links   []struct {
			Rel  string `xml:"rel,attr"`
			Href string `xml:"href,attr"`
		} `xml:"http://www.w3.org/2005/Atom link"`
		Content struct {
			Type string `xml:"type,attr"`
			Text string `xml:",chardata"`
		} `xml:"http://www.w3.org/2005/Atom content"`
		Category []struct {
			Term string `xml:"term,attr"`
		} `xml:"http://www.w3.org/2005/Atom category"`
	} `xml:"http://www.w3.org/2005/Atom entry"`
}

// checkAtom parses body and checks RFC 4287's required elements: the
// feed's id (an absolute IRI), title, updated (RFC 3339) and author (the
// entries carry none of their own); every entry's id, title, updated and
// its alternate link (content is inline text).
func checkAtom(t *testing.T, body string) feedEnvelope {
	t.Helper()
	var f feedEnvelope
	if err := xml.Unmarshal([]byte(body), &f); err != nil {
		t.Fatalf("the feed is not Atom XML: %v\n%s", err, body)
	}
	absolute := func(what, id string) {
		if !strings.HasPrefix(id, "urn:uuid:") {
			t.Errorf("%s id %q is not a urn:uuid", what, id)
		} else if _, err := uuid.Parse(strings.TrimPrefix(id, "urn:uuid:")); err != nil {
			t.Errorf("%s id %q: %v", what, id, err)
		}
	}
	stamp := func(what, v string) {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			t.Errorf("%s updated %q is not RFC 3339", what, v)
		}
	}
	absolute("feed", f.ID)
	stamp("feed", f.Updated)
	if f.Title == "" || len(f.Authors) != 1 || f.Authors[0].Name == "" {
		t.Errorf("feed title %q, authors %+v", f.Title, f.Authors)
	}
	var self bool
	for _, l := range f.Links {
		self = self || l.Rel == "self" && l.Type == "application/atom+xml"
	}
	if !self {
		t.Errorf("no self link: %+v", f.Links)
	}
	seen := map[string]bool{}
	for _, e := range f.Entries {
		absolute("entry", e.ID)
		stamp("entry "+e.ID, e.Updated)
		if seen[e.ID] {
			t.Errorf("entry id %s twice", e.ID)
		}
		seen[e.ID] = true
		if e.Title == "" || len(e.Links) != 1 || e.Links[0].Rel != "alternate" || e.Content.Type != "text" || e.Content.Text == "" {
			t.Errorf("entry %s: title %q links %+v content %+v", e.ID, e.Title, e.Links, e.Content)
		}
	}
	return f
}

// TestAtomFeed: /feed.atom is an Atom 1.0 feed of the Changes, linked
// from the public pages, with stable urn:uuid ids, RFC 3339 times,
// Korean names in UTF-8, values escaped, nothing of the probes' messages;
// a dataset's feed holds its Changes only.
func TestAtomFeed(t *testing.T) {
	f := newFixture(t, nil)
	f.observe(t, "fred-dgs10", testNow.Add(-3*time.Hour), testNow.Add(-2*time.Hour), 20*time.Minute, watch.OK, 200)
	f.observe(t, "fred-dgs10", testNow.Add(-2*time.Hour+time.Minute), testNow.Add(-time.Hour), 10*time.Minute, watch.ProviderError, 503)
	const ecos = "ecos-722y001-0101000"
	if _, err := f.store.AddChanges(context.Background(), watch.Change{At: testNow.Add(-30 * time.Minute), Dataset: ecos,
		Kind: watch.ChangeRevision, Period: "2026-11-30", From: "3.25", To: `<b>3.50</b> & "x"`, Summary: "revised <b>"}); err != nil {
		t.Fatal(err)
	}

	r := f.get(t, "/feed.atom")
	if r.code != 200 || r.header.Get("Content-Type") != "application/atom+xml; charset=utf-8" || r.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("GET /feed.atom: %d %v\n%s", r.code, r.header, r.body)
	}
	if !strings.HasPrefix(r.body, `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Errorf("no XML declaration: %.80s", r.body)
	}
	feed := checkAtom(t, r.body)
	if len(feed.Entries) < 2 {
		t.Fatalf("%d entries, want the state change and the revision", len(feed.Entries))
	}
	name := f.reg.Dataset(ecos).Name
	first := feed.Entries[0] // newest first: the revision
	if want := name + `: period 2026-11-30 revised 3.25 → <b>3.50</b> & "x"`; first.Title != want {
		t.Errorf("entry title %q, want %q", first.Title, want)
	}
	if !strings.Contains(r.body, name) {
		t.Errorf("the Korean name %q is not in the feed as UTF-8", name)
	}
	if strings.Contains(r.body, "<b>") {
		t.Error("a value's markup reaches the feed unescaped")
	}
	if first.Links[0].Href != "/datasets/"+ecos+"#change-"+regexp.MustCompile(`\d+$`).FindString(first.Links[0].Href) || first.Category[0].Term != "revision" {
		t.Errorf("entry link %+v category %+v", first.Links, first.Category)
	}
	var state bool
	for _, e := range feed.Entries {
		if e.Category[0].Term == "state" && strings.HasSuffix(e.Title, "up → down") && strings.Contains(e.Content.Text, "HTTP 503") {
			state = true
		}
	}
	if !state {
		t.Errorf("no up → down entry of fred-dgs10 with its evidence: %+v", feed.Entries)
	}
	for _, leak := range []string{"secret-internal-detail", "serviceKey", "example.invalid", "csrf"} {
		if strings.Contains(r.body, leak) {
			t.Errorf("the feed shows %q", leak)
		}
	}
	// Stable: the same ids in a second answer, and Changes of the past
	// keep theirs as new ones arrive.
	again := checkAtom(t, f.get(t, "/feed.atom").body)
	for i := range feed.Entries {
		if again.Entries[i].ID != feed.Entries[i].ID || again.ID != feed.ID {
			t.Errorf("entry %d: id %s, then %s", i, feed.Entries[i].ID, again.Entries[i].ID)
		}
	}

	// A dataset's feed holds its Changes only.
	one := checkAtom(t, f.get(t, "/datasets/fred-dgs10/feed.atom").body)
	if len(one.Entries) == 0 || one.ID == feed.ID {
		t.Errorf("fred-dgs10's feed: %d entries, id %s", len(one.Entries), one.ID)
	}
	for _, e := range one.Entries {
		if !strings.HasPrefix(e.Links[0].Href, "/datasets/fred-dgs10#") {
			t.Errorf("fred-dgs10's feed holds %s", e.Links[0].Href)
		}
	}
	for _, path := range []string{"/datasets/nope/feed.atom", "/datasets/%3Cx%3E/feed.atom"} {
		if r := f.get(t, path); r.code != 404 {
			t.Errorf("%s: %d, want 404", path, r.code)
		}
	}
	if r := f.get(t, "/feed.atom?changes=0"); r.code != 400 {
		t.Errorf("changes=0: %d, want 400", r.code)
	}
	if n := len(checkAtom(t, f.get(t, "/feed.atom?changes=1").body).Entries); n != 1 {
		t.Errorf("changes=1: %d entries", n)
	}

	// The pages name their feeds.
	link := `<link rel="alternate" type="application/atom+xml"`
	if !strings.Contains(f.get(t, "/").body, link+` title="Changes" href="/feed.atom">`) {
		t.Error("the summary page does not link the feed")
	}
	if !strings.Contains(f.get(t, "/datasets/fred-dgs10").body, link+` title="Changes of this dataset" href="/datasets/fred-dgs10/feed.atom">`) {
		t.Error("the dataset page does not link its feed")
	}
	if !strings.Contains(f.get(t, "/datasets/fred-dgs10").body, `id="change-`) {
		t.Error("the dataset page's Changes have no anchors for the entries' links")
	}
}

// TestAtomFeedPublicURL: under Config.PublicURL the feed's links are
// absolute; its entries' ids do not depend on it.
func TestAtomFeedPublicURL(t *testing.T) {
	plain := newFixture(t, nil)
	f := newFixture(t, func(c *Config) { c.PublicURL = "https://status.example.com/sluice/" })
	for _, fx := range []*fixture{plain, f} {
		fx.observe(t, "fred-dgs10", testNow.Add(-2*time.Hour), testNow.Add(-time.Hour), 10*time.Minute, watch.ProviderError, 503)
	}
	a, b := checkAtom(t, plain.get(t, "/feed.atom").body), checkAtom(t, f.get(t, "/feed.atom").body)
	if len(b.Entries) == 0 || len(a.Entries) != len(b.Entries) {
		t.Fatalf("%d and %d entries", len(a.Entries), len(b.Entries))
	}
	if h := b.Entries[0].Links[0].Href; !strings.HasPrefix(h, "https://status.example.com/sluice/datasets/fred-dgs10#change-") {
		t.Errorf("entry link %q", h)
	}
	if b.Links[0].Href != "https://status.example.com/sluice/feed.atom" {
		t.Errorf("self link %q", b.Links[0].Href)
	}
	for i := range a.Entries {
		if a.Entries[i].ID != b.Entries[i].ID {
			t.Errorf("entry %d's id depends on the public URL", i)
		}
	}
	for _, bad := range []string{"javascript:alert(1)", "https://", "https://u:p@h", "https://h/?q=1", "ftp://h", `https://h/"x`} {
		if _, err := New(Config{Registry: f.reg, Store: f.store, PublicURL: bad}); err == nil || !strings.Contains(err.Error(), "public URL") {
			t.Errorf("public URL %q: %v", bad, err)
		}
	}
}
