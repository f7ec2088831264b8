package wire

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

var kisRows = Rows{JSON: "output2", Period: "stck_bsop_date", PeriodFormat: YYYYMMDD, Values: []string{"bstp_nmix_prpr"}}

// countOf streams body through a Counter in pieces of size step (the
// whole body at once for step 0).
func countOf(body []byte, r Rows, step int) (int, bool) {
	c := NewCounter(r)
	if step <= 0 {
		step = len(body) + 1
	}
	for p := body; len(p) > 0; {
		n := min(step, len(p))
		if w, err := c.Write(p[:n]); w != n || err != nil {
			panic(fmt.Sprintf("Write(%d bytes) = %d, %v", n, w, err))
		}
		p = p[n:]
	}
	return c.Count()
}

// TestCounterCountsRows: a Counter counts the rows Extract reads, fed the
// answer whole or a byte at a time, and reports no count where Extract
// finds no place for rows or the answer is cut or malformed.
func TestCounterCountsRows(t *testing.T) {
	tests := []struct {
		name string
		rows Rows
		body string
		want int // -1: no count
	}{
		{"ecos json", ecosRows, `{"StatisticSearch":{"list_total_count":2,"row":[{"TIME":"202401","ITEM_CODE1":"0","DATA_VALUE":"113.15"},{"TIME":"202402","ITEM_CODE1":"0","DATA_VALUE":"113.8","WGT":null}]}}`, 2},
		{"ecos xml", ecosRows, `<?xml version="1.0" encoding="UTF-8"?><StatisticSearch><list_total_count>1</list_total_count><row><TIME>202401</TIME><ITEM_CODE1>0</ITEM_CODE1><DATA_VALUE>1</DATA_VALUE></row></StatisticSearch>`, 1},
		{"fred json", fredRows, `{"realtime_start":"2025-03-11","count":3,"observations":[{"date":"2025-03-06","value":"4.28"},{"date":"2025-03-07","value":"4.30"},{"date":"2025-03-10","value":"."}]}`, 3},
		{"fred xml self-closing rows", fredRows, "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n<observations count=\"2\">\n  <observation date=\"2025-03-06\" value=\"4.28\"/>\n  <observation date=\"2025-03-07\" value=\"4.30\" />\n</observations>", 2},
		{"fred json no observations", fredRows, `{"count":0,"observations":[]}`, 0},
		{"fred xml no observations", fredRows, `<observations count="0"></observations>`, 0},
		{"fred xml empty root", fredRows, `<observations count="0"/>`, 0},
		{"upbit", upbitRows, `[{"candle_date_time_utc":"2024-01-07T00:00:00","trade_price":9.0e7},{"candle_date_time_utc":"2024-01-06T00:00:00","trade_price":-0.5}]`, 2},
		{"upbit empty", upbitRows, "\xef\xbb\xbf \n[ ]\n", 0},
		{"kis", kisRows, `{"rt_cd":"0","msg_cd":"MCA00000","msg1":"ok","output1":{"output2":[1,2,3]},"output2":[{"stck_bsop_date":"20250310","bstp_nmix_prpr":"2537.60"},{"stck_bsop_date":"20250307","bstp_nmix_prpr":"2563.48"}]}`, 2},
		{"kis no output2", kisRows, `{"rt_cd":"0","msg_cd":"APBK0013","msg1":"ok","output":{"ODNO":"1"}}`, -1},
		{"datago json array", datagoRows, `{"response":{"header":{"resultCode":"00"},"body":{"numOfRows":2,"pageNo":1,"totalCount":2,"items":{"item":[{"basDt":"20250310"},{"basDt":"20250307"}]}}}}`, 2},
		{"datago json one item as an object", datagoRows, `{"response":{"body":{"items":{"item":{"basDt":"20250310","idxNm":"코스피"}},"totalCount":1}}}`, 1},
		{"datago json items empty string", datagoRows, `{"response":{"header":{"resultCode":"03"},"body":{"items":"","totalCount":0}}}`, 0},
		{"datago json items null", datagoRows, `{"response":{"body":{"items":null}}}`, 0},
		{"datago xml", datagoRows, `<response><header><resultCode>00</resultCode></header><body><items><item><basDt>20250310</basDt><idxNm><![CDATA[a<item>b]]></idxNm></item><!-- <item> --><item><basDt>20250307</basDt></item></items></body></response>`, 2},
		{"datago xml no items", datagoRows, `<response><body><items/><totalCount>0</totalCount></body></response>`, 0},
		{"datago xml error envelope", datagoRows, `<OpenAPI_ServiceResponse><cmmMsgHeader><returnReasonCode>30</returnReasonCode></cmmMsgHeader></OpenAPI_ServiceResponse>`, -1},
		{"xml namespace prefixes", datagoRows, `<x:response xmlns:x="u"><x:body><x:items><x:item a='>'/></x:items></x:body></x:response>`, 1},
		{"xml doctype", fredRows, `<!DOCTYPE observations [<!ENTITY a "b>">]><observations><observation date="2025-01-01"/></observations>`, 1},
		{"escaped member name", fredRows, `{"obs\u0065rvations":[{"date":"2025-01-01"}],"x":"\"observations\""}`, 1},
		{"repeated member: the last counts", fredRows, `{"observations":[{},{}],"observations":[{}]}`, 1},
		{"rows place a number", fredRows, `{"observations":7}`, -1},
		{"rows place a string", fredRows, `{"observations":"none"}`, -1},
		{"on the way an array", datagoRows, `{"response":[{"body":{}}]}`, -1},
		{"on the way null", datagoRows, `{"response":{"body":null}}`, 0},
		{"nested arrays count as one row each", upbitRows, `[[1,[2]],{"a":[3,4]},"s",5,true,null]`, 6},
		{"cut short", fredRows, `{"observations":[{"date":"2025-01-01"}`, -1},
		{"trailing garbage", fredRows, `{"observations":[]} x`, -1},
		{"bad number", fredRows, `{"observations":[01]}`, -1},
		{"bad escape", fredRows, `{"observations":["\x"]}`, -1},
		{"control byte in a string", fredRows, "{\"observations\":[\"a\tb\"]}", -1},
		{"mismatched brackets", fredRows, `{"observations":[}`, -1},
		{"xml cut short", fredRows, `<observations><observation date="1"/>`, -1},
		{"xml mismatched end", fredRows, `<observations><observation></observations></observation>`, -1},
		{"xml second root", fredRows, `<observations/><observations><observation/></observations>`, -1},
		{"xml other root", fredRows, `<error><observations><observation/></observations></error>`, -1},
		{"xml for json-only rows", upbitRows, `<a/>`, -1},
		{"neither", fredRows, `observations`, -1},
		{"empty", fredRows, ``, -1},
		{"html", fredRows, `<!doctype html><html><body>502</body></html>`, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, step := range []int{0, 1, 2, 3, 7} {
				n, ok := countOf([]byte(tt.body), tt.rows, step)
				switch {
				case tt.want < 0 && ok:
					t.Errorf("pieces of %d: counted %d, want no count", step, n)
				case tt.want >= 0 && (!ok || n != tt.want):
					t.Errorf("pieces of %d: %d rows (sure %v), want %d", step, n, ok, tt.want)
				}
			}
			// Where Extract reads rows, the count is theirs.
			if rows, err := Extract([]byte(tt.body), tt.rows); err == nil && !strings.Contains(tt.name, "nested") {
				if n, ok := countOf([]byte(tt.body), tt.rows, 0); !ok || n != len(rows) {
					t.Errorf("counted %d (sure %v), Extract read %d rows", n, ok, len(rows))
				}
			}
		})
	}
}

// refCount counts the records of an answer with encoding/json and
// encoding/xml, the way Extract finds them, for the fuzz target: -1 when
// there is no place for rows or the answer does not parse.
func refCount(body []byte, r Rows) int {
	body = bytes.TrimLeft(bytes.TrimPrefix(body, []byte(utf8BOM)), " \t\r\n")
	if len(body) == 0 {
		return -1
	}
	switch body[0] {
	case '{', '[':
		return refCountJSON(body, r)
	case '<':
		return refCountXML(body, r)
	}
	return -1
}

func refCountJSON(body []byte, r Rows) int {
	if !json.Valid(body) {
		return -1
	}
	cur := json.RawMessage(body)
	for _, seg := range splitPath(r.JSON) {
		if empty(cur) {
			return 0
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return -1
		}
		next, ok := obj[seg]
		if !ok {
			return -1
		}
		cur = next
	}
	cur = bytes.TrimSpace(cur)
	switch {
	case empty(cur):
		return 0
	case cur[0] == '{':
		return 1
	case cur[0] == '[':
		var items []json.RawMessage
		if json.Unmarshal(cur, &items) != nil {
			return -1
		}
		return len(items)
	}
	return -1
}

func refCountXML(body []byte, r Rows) int {
	path := splitPath(r.XML)
	if len(path) == 0 {
		return -1
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = true
	dec.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	var stack []string
	n, roots, parent, closed := 0, 0, false, false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return -1
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 {
				if roots++; roots > 1 || t.Name.Local != path[0] {
					return -1
				}
			}
			stack = append(stack, t.Name.Local)
			if prefixOf(stack, path) {
				switch len(stack) {
				case len(path):
					n++
				case len(path) - 1:
					parent = true
				}
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
			closed = len(stack) == 0
		}
	}
	if !closed || (len(path) > 1 && !parent) {
		return -1
	}
	return n
}

// FuzzCounter: whatever the bytes and however they are cut, a Counter
// never panics; the count of a JSON answer is encoding/json's reading of
// it, sure exactly when encoding/json finds the rows' place; a sure count
// of an XML answer that encoding/xml reads is its count.
func FuzzCounter(f *testing.F) {
	specs := []Rows{ecosRows, fredRows, datagoRows, upbitRows, kisRows}
	for _, s := range []string{
		`{"StatisticSearch":{"row":[{"TIME":"202401","DATA_VALUE":"1"}]}}`,
		`<observations><observation date="2025-01-01" value="1"/></observations>`,
		`{"response":{"body":{"items":{"item":{"basDt":"20250101"}}}}}`,
		`{"response":{"body":{"items":""}}}`,
		`[{"candle_date_time_utc":"2024-01-07T00:00:00","trade_price":1.5e-3}]`,
		`{"output2":[{"stck_bsop_date":"20250310","bstp_nmix_prpr":"2500.00"}],"output2":null}`,
		`<response><body><items><item><basDt>20250101</basDt></item></items></body></response>`,
		`<?xml version="1.0"?><!-- c --><StatisticSearch><row/><![CDATA[<row>]]></StatisticSearch>`,
		`<a><b>`, `{"a":`, "\xef\xbb\xbf[]", `{"obs\u0065rvations":[1,[2],{"3":3}]}`,
	} {
		for i := range specs {
			f.Add([]byte(s), uint8(i), uint8(0))
			f.Add([]byte(s), uint8(i), uint8(1))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, which, step uint8) {
		spec := specs[int(which)%len(specs)]
		n, ok := countOf(body, spec, int(step))
		if whole, wok := countOf(body, spec, 0); whole != n || wok != ok {
			t.Fatalf("in pieces of %d: %d (sure %v); whole: %d (sure %v)", step, n, ok, whole, wok)
		}
		want := refCount(body, spec)
		trimmed := bytes.TrimLeft(bytes.TrimPrefix(body, []byte(utf8BOM)), " \t\r\n")
		if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
			if (want >= 0) != ok || (ok && n != want) {
				t.Fatalf("JSON: counted %d (sure %v), encoding/json reads %d", n, ok, want)
			}
			return
		}
		if ok && want >= 0 && n != want {
			t.Fatalf("XML: counted %d, encoding/xml reads %d", n, want)
		}
	})
}

// BenchmarkCounterJSON measures counting a 1 MiB KIS-like answer as it
// streams through in 32 KiB reads.
func BenchmarkCounterJSON(b *testing.B) {
	body := []byte(`{"rt_cd":"0","msg_cd":"MCA00000","msg1":"ok","output1":{"a":"1"},"output2":[`)
	rows := 0
	for len(body) < 1<<20 {
		body = append(body, `{"stck_bsop_date":"20250131","bstp_nmix_prpr":"2517.37","acml_vol":"331440"},`...)
		rows++
	}
	body = append(body[:len(body)-1], "]}"...)
	benchCount(b, body, kisRows, rows)
}

// BenchmarkCounterXML measures counting a 1 MiB FRED-like XML answer.
func BenchmarkCounterXML(b *testing.B) {
	body := []byte(`<?xml version="1.0" encoding="utf-8" ?><observations count="1">`)
	rows := 0
	for len(body) < 1<<20 {
		body = append(body, `<observation realtime_start="2025-03-11" realtime_end="2025-03-11" date="2025-03-06" value="4.28"/>`...)
		rows++
	}
	body = append(body, `</observations>`...)
	benchCount(b, body, fredRows, rows)
}

func benchCount(b *testing.B, body []byte, r Rows, want int) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if n, ok := countOf(body, r, 32<<10); !ok || n != want {
			b.Fatalf("%d rows (sure %v), want %d", n, ok, want)
		}
	}
}
