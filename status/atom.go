package status

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sluicehq/sluice/watch"
	"github.com/sluicehq/sluice/watch/store"
)

// The Atom 1.0 feeds (RFC 4287) of the watch's Changes: /feed.atom, every
// dataset's, and /datasets/{id}/feed.atom, one dataset's; the newest 50
// unless ?changes= says (1 to 500). An entry holds what the public dataset
// page shows of a Change — its kind, values, summary and the outcomes of
// its evidence — and nothing an operator alone sees (probe messages).

// atomFeed is an Atom feed document.
type atomFeed struct {
	XMLName   xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID        string      `xml:"id"`
	Title     atomText    `xml:"title"`
	Subtitle  *atomText   `xml:"subtitle,omitempty"`
	Updated   string      `xml:"updated"`
	Links     []atomLink  `xml:"link"`
	Author    atomPerson  `xml:"author"`
	Generator string      `xml:"generator"`
	Entries   []atomEntry `xml:"entry"`
}

type atomText struct {
	Type string `xml:"type,attr,omitempty"`
	Lang string `xml:"http://www.w3.org/XML/1998/namespace lang,attr,omitempty"`
	Text string `xml:",chardata"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr,omitempty"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type atomPerson struct {
	Name string `xml:"name"`
}

type atomCategory struct {
	Term string `xml:"term,attr"`
}

type atomEntry struct {
	ID        string         `xml:"id"`
	Title     atomText       `xml:"title"`
	Updated   string         `xml:"updated"`
	Published string         `xml:"published"`
	Links     []atomLink     `xml:"link"`
	Category  []atomCategory `xml:"category"`
	Content   atomText       `xml:"content"`
}

// changeNamespace is the UUID namespace of the Changes' entry ids.
var changeNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/sluicehq/sluice#change"))

// ChangeEntryID is the Atom entry id of a Change: a name-based UUID
// (RFC 9562 version 5) of its dataset, store id and time, the same in
// every answer and on every server that reads the same store.
func ChangeEntryID(c watch.Change) string {
	name := c.Dataset + "\x00" + strconv.FormatInt(c.ID, 10) + "\x00" + c.At.UTC().Format(time.RFC3339Nano)
	return "urn:uuid:" + uuid.NewSHA1(changeNamespace, []byte(name)).String()
}

// rfc3339 writes t as Atom's date construct wants it.
func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// changeTitle is an entry's title: the dataset's name and what changed.
func changeTitle(name string, c watch.Change) string {
	switch c.Kind {
	case watch.ChangeState, watch.ChangeDegraded:
		return fmt.Sprintf("%s: %s → %s", name, c.From, c.To)
	case watch.ChangeShape:
		return name + ": the answer changed shape"
	case watch.ChangeLate:
		return fmt.Sprintf("%s is late (newest period %s)", name, c.From)
	case watch.ChangeCaughtUp:
		return fmt.Sprintf("%s caught up (newest period %s)", name, c.To)
	case watch.ChangeRevision:
		return fmt.Sprintf("%s: period %s revised %s → %s", name, c.Period, quoteEmpty(c.From), quoteEmpty(c.To))
	}
	return fmt.Sprintf("%s: %s", name, c.Kind)
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// feedDoc builds the feed of the Changes of datasets (all of the
// registry's when ids is nil).
func (s *Server) feedDoc(ctx context.Context, title, self, alternate string, ids []string, n int) (atomFeed, error) {
	reg := s.cfg.Registry
	if ids == nil {
		for _, d := range reg.Datasets {
			ids = append(ids, d.ID)
		}
	}
	chs, err := s.cfg.Store.Changes(ctx, store.ChangeFilter{Datasets: ids, Limit: n})
	if err != nil {
		return atomFeed{}, fmt.Errorf("reading the changes for the feed: %w", err)
	}
	feedKey := s.pageID() + "\x00" + self
	f := atomFeed{
		ID:        "urn:uuid:" + uuid.NewSHA1(changeNamespace, []byte(feedKey)).String(),
		Title:     atomText{Text: title, Lang: langOf(title)},
		Subtitle:  &atomText{Text: "Changes the watch recorded: state changes, late data and catching up, answer shapes, revised periods."},
		Updated:   rfc3339(s.now()),
		Links:     []atomLink{{Rel: "self", Type: "application/atom+xml", Href: s.pageURL(self)}, {Rel: "alternate", Type: "text/html", Href: s.pageURL(alternate)}},
		Author:    atomPerson{Name: s.title},
		Generator: "Sluice",
		Entries:   []atomEntry{},
	}
	if len(chs) > 0 {
		f.Updated = rfc3339(chs[0].At) // newest first
	}
	for _, c := range chs {
		name := c.Dataset
		if ds := reg.Dataset(c.Dataset); ds != nil {
			name = ds.Name
		}
		t := changeTitle(name, c)
		body := c.Summary
		if ev := evidenceText(c.Evidence); ev != "" {
			body += "\nEvidence: " + ev
		}
		f.Entries = append(f.Entries, atomEntry{
			ID:        ChangeEntryID(c),
			Title:     atomText{Type: "text", Text: t, Lang: langOf(t)},
			Updated:   rfc3339(c.At),
			Published: rfc3339(c.At),
			Links:     []atomLink{{Rel: "alternate", Type: "text/html", Href: s.pageURL(fmt.Sprintf("/datasets/%s#change-%d", c.Dataset, c.ID))}},
			Category:  []atomCategory{{Term: string(c.Kind)}},
			Content:   atomText{Type: "text", Text: body},
		})
	}
	return f, nil
}

func (s *Server) writeFeed(w http.ResponseWriter, r *http.Request, f atomFeed) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(&buf)
	enc.Indent("", "  ")
	if err := enc.Encode(f); err != nil {
		s.internal(w, r, fmt.Errorf("writing the atom feed: %w", err))
		return
	}
	buf.WriteByte('\n')
	allowCrossOrigin(w)
	w.Header().Set("Content-Type", "application/atom+xml; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) feed(w http.ResponseWriter, r *http.Request) {
	n, err := boundedInt(r, "changes", defaultChanges, 1, maxChanges)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	f, err := s.feedDoc(r.Context(), "Changes · "+s.title, "/feed.atom", "/", nil, n)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.writeFeed(w, r, f)
}

func (s *Server) datasetFeed(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !validID(id) || s.cfg.Registry.Dataset(id) == nil {
		s.errorPage(w, r, http.StatusNotFound, "No such dataset.")
		return
	}
	n, err := boundedInt(r, "changes", defaultChanges, 1, maxChanges)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	ds := s.cfg.Registry.Dataset(id)
	f, err := s.feedDoc(r.Context(), "Changes of "+ds.Name+" · "+s.title, "/datasets/"+id+"/feed.atom", "/datasets/"+id, []string{id}, n)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.writeFeed(w, r, f)
}
