package connector

import (
	"encoding/json"
	"strings"
	"testing"
)

type step struct {
	path  string
	token string
	empty bool
}

func walk(t *testing.T, doc string) ([]step, bool) {
	t.Helper()
	var got []step
	complete := WalkJSON([]byte(doc), func(ev JSONEvent) bool {
		tok := ""
		switch v := ev.Token.(type) {
		case json.Delim:
			tok = v.String()
		case nil:
			tok = "null"
		case bool:
			if v {
				tok = "true"
			} else {
				tok = "false"
			}
		default:
			tok = ev.String()
		}
		got = append(got, step{strings.Join(ev.Path, "."), tok, ev.Empty})
		return true
	})
	return got, complete
}

func TestWalkJSON(t *testing.T) {
	got, complete := walk(t, `{"rt_cd":"0","output1":{"a":1},"output2":[],"x":[{"b":null}],"t":true}`)
	want := []step{
		{"", "{", false},
		{"rt_cd", "0", false},
		{"output1", "{", false}, {"output1.a", "1", false}, {"output1", "}", false},
		{"output2", "[", false}, {"output2", "]", true},
		{"x", "[", false}, {"x.[]", "{", false}, {"x.[].b", "null", false}, {"x.[]", "}", false}, {"x", "]", false},
		{"t", "true", false},
		{"", "}", false},
	}
	if !complete {
		t.Error("complete document reported incomplete")
	}
	if len(got) != len(want) {
		t.Fatalf("got %d steps %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestWalkJSONTruncatedHead(t *testing.T) {
	got, complete := walk(t, `{"StatisticSearch":{"list_total_count":4,"row":[{"STAT_CODE":"722Y0`)
	if complete {
		t.Error("a cut-off head reported complete")
	}
	var sawTotal bool
	for _, s := range got {
		if s.path == "StatisticSearch.list_total_count" && s.token == "4" {
			sawTotal = true
		}
		if strings.HasPrefix(s.path, "StatisticSearch.row.[].STAT_CODE") {
			t.Errorf("visited a value cut off by the head: %+v", s)
		}
	}
	if !sawTotal {
		t.Errorf("list_total_count not visited: %v", got)
	}
	// A BOM and a root array.
	got, complete = walk(t, "\xEF\xBB\xBF[]")
	if !complete || len(got) != 2 || !got[1].empty {
		t.Errorf("BOM + [] = %v, %v", got, complete)
	}
}

func TestWalkXML(t *testing.T) {
	doc := `<?xml version="1.0" encoding="EUC-KR"?><OpenAPI_ServiceResponse><cmmMsgHeader><errMsg>SERVICE ERROR</errMsg>` +
		`<returnAuthMsg>LIMITED_NUMBER_OF_SERVICE_REQUESTS_EXCEEDS_ERROR</returnAuthMsg><returnReasonCode>22</returnReasonCode></cmmMsgHeader></OpenAPI_ServiceResponse>`
	leaves := map[string]string{}
	var root string
	closed := WalkXML([]byte(doc), func(ev XMLEvent) bool {
		if ev.Start && len(ev.Path) == 1 {
			root = ev.Path[0]
		}
		if !ev.Start {
			leaves[strings.Join(ev.Path, "/")] = ev.Text
		}
		return true
	})
	if !closed || root != "OpenAPI_ServiceResponse" {
		t.Errorf("closed=%v root=%q", closed, root)
	}
	if got := leaves["OpenAPI_ServiceResponse/cmmMsgHeader/returnReasonCode"]; got != "22" {
		t.Errorf("returnReasonCode = %q (%v)", got, leaves)
	}
	ev := XMLEvent{Path: []string{"a", "cmmMsgHeader", "returnReasonCode"}}
	if !ev.At("cmmMsgHeader", "returnReasonCode") || ev.At("x", "returnReasonCode") || ev.At("a", "b", "c", "d") {
		t.Error("XMLEvent.At")
	}
}

func TestSniffAndSnippet(t *testing.T) {
	for in, want := range map[string]string{" \n{}": "json", "[1]": "json", "\xEF\xBB\xBF<?xml": "xml", "<html>": "xml", "oops": "", "": ""} {
		if got := Sniff([]byte(in)); got != want {
			t.Errorf("Sniff(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Snippet([]byte("a\n  b\xff c"), 4); got != "a b\uFFFD…" {
		t.Errorf("Snippet = %q", got)
	}
}

func FuzzWalkJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":null}],"c":"d"}`, `[]`, `{"x":`, `{{`, `]`, `"s"`, "\xEF\xBB\xBF{}", `{"a":1}{"b":2}`, `[[[[[]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		depth := 0
		WalkJSON(b, func(ev JSONEvent) bool {
			if d, ok := ev.Token.(json.Delim); ok && (d == '{' || d == '[') {
				depth++
			}
			if len(ev.Path) > depth {
				t.Fatalf("path %v deeper than %d open containers", ev.Path, depth)
			}
			return true
		})
	})
}

func FuzzWalkXML(f *testing.F) {
	for _, s := range []string{`<a><b>1</b></a>`, `<?xml version="1.0" encoding="euc-kr"?><r/>`, `<a><b>`, `</a>`, `<!DOCTYPE x [<!ENTITY e "v">]><a>&e;</a>`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		WalkXML(b, func(ev XMLEvent) bool {
			if len(ev.Path) == 0 {
				t.Fatal("event without a path")
			}
			return true
		})
	})
}

func FuzzForeign(f *testing.F) {
	for _, s := range []string{"", " \r\n", "<html>", "<!DOCTYPE HTML>", `{"a":1}`, "<r/>", "not found", "\xEF\xBB\xBF<HTML>", "<h1>x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, format := range []string{"json", "xml", ""} {
			h := Head{Status: 400, Bytes: b, Format: format}
			what := h.Foreign()
			switch {
			case format == "" && what != "":
				t.Fatalf("Foreign(%q) with no format asked = %q", b, what)
			case what == "" && format != "" && Sniff(b) == "":
				t.Fatalf("Foreign(%q) = \"\" for a body that sniffs as nothing", b)
			case what != "" && (ForeignVerdict(h).Err == nil || ForeignVerdict(h).Err.Class != Transient):
				t.Fatalf("ForeignVerdict(%q) is not Transient", b)
			}
		}
	})
}
