package registry

import "gopkg.in/yaml.v3"

// Notice is a sentence a provider's terms of use ask an application to
// show wherever its data appears (providers[].notice): the status pages
// show it on the summary page and on each of the provider's dataset
// pages.
type Notice struct {
	Text     string // the sentence, verbatim
	Lang     string // its language (BCP 47, e.g. en, ko); "" when not declared
	Link     string // where the terms are; "" when none
	LinkText string // the link's text; defaults to the link
	Pos      Pos
}

// notice reads a provider's notice block: text required, lang, link and
// link_text optional.
func (d *decoder) notice(n *yaml.Node, path string) *Notice {
	nt := &Notice{Pos: d.pos(n, path)}
	present := d.mapping(n, path, []field{
		{"text", func(n *yaml.Node, p string) { nt.Text = d.str(n, p) }},
		{"lang", func(n *yaml.Node, p string) { nt.Lang = d.str(n, p) }},
		{"link", func(n *yaml.Node, p string) { nt.Link = d.url(n, p) }},
		{"link_text", func(n *yaml.Node, p string) { nt.LinkText = d.str(n, p) }},
	})
	if present == nil {
		return nil
	}
	if present["text"] == nil {
		d.errorf(n, path, "missing field \"text\": the sentence the terms ask to be shown")
		return nil
	}
	if nt.Text == "" {
		return nil
	}
	if nt.LinkText == "" {
		nt.LinkText = nt.Link
	}
	return nt
}
