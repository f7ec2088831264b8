package connector

import (
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/registry"
)

// EncodeQuery encodes parameters in the given order, each name and value
// percent-encoded exactly once (url.QueryEscape). A data.go.kr decoding key
// containing + / = therefore goes out as %2B %2F %3D.
func EncodeQuery(params []registry.Param) string {
	var b strings.Builder
	for i, p := range params {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p.Name))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(p.Value))
	}
	return b.String()
}

// HasParam reports whether params holds a parameter of this name.
func HasParam(params []registry.Param, name string) bool {
	for _, p := range params {
		if p.Name == name {
			return true
		}
	}
	return false
}
