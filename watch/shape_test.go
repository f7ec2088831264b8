package watch

import (
	"encoding/json"
	"strings"
	"testing"
)

func fields(s Shape) string {
	var b strings.Builder
	for _, f := range s.Fields {
		b.WriteString(f.Path + " " + f.Type + "\n")
	}
	return b.String()
}

func TestFingerprintJSON(t *testing.T) {
	// data.go.kr's envelope, with one item.
	body := `{"response":{"header":{"resultCode":"00","resultMsg":"NORMAL SERVICE."},
	"body":{"items":{"item":[{"basDt":"20261127","idxNm":"코스피","clpr":"2500.1","trqu":null},
	{"basDt":"20261127","idxNm":"코스닥","clpr":812.5,"trqu":"100"}]},"numOfRows":10,"pageNo":1,"totalCount":2,
	"a.b":true,"":[], "q\"k":{}}}}`
	sh, err := FingerprintJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := `$ object
$.response object
$.response.body object
$.response.body.items object
$.response.body.items.item array
$.response.body.items.item[] object
$.response.body.items.item[].basDt string
$.response.body.items.item[].clpr number|string
$.response.body.items.item[].idxNm string
$.response.body.items.item[].trqu null|string
$.response.body.numOfRows number
$.response.body.pageNo number
$.response.body.totalCount number
$.response.body[""] array
$.response.body["a.b"] bool
$.response.body["q\"k"] object
$.response.header object
$.response.header.resultCode string
$.response.header.resultMsg string
`
	if got := fields(sh); got != want {
		t.Errorf("fields:\n%s\nwant:\n%s", got, want)
	}
	// Values and key order never change the fingerprint.
	other := strings.NewReplacer("20261127", "20200101", "코스피", "x", `"clpr":"2500.1","trqu":null`, `"trqu":null,"clpr":"1"`).Replace(body)
	sh2, err := FingerprintJSON([]byte(other))
	if err != nil {
		t.Fatal(err)
	}
	if sh.Fingerprint() != sh2.Fingerprint() || len(sh.Fingerprint()) != 64 {
		t.Errorf("fingerprints differ for the same shape: %s %s", sh.Fingerprint(), sh2.Fingerprint())
	}
	if (Shape{}).Fingerprint() != "" {
		t.Error("empty shape has a fingerprint")
	}
}

func TestFingerprintJSONTopLevel(t *testing.T) {
	for in, want := range map[string]string{
		`[]`:                  "$ array\n",
		`[1,"a",null]`:        "$ array\n$[] null|number|string\n",
		`"x"`:                 "$ string\n",
		"\ufeff {\"a\":1} \n": "$ object\n$.a number\n",
		`[[{"x":1}],[]]`:      "$ array\n$[] array\n$[][] object\n$[][].x number\n",
	} {
		sh, err := FingerprintJSON([]byte(in))
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := fields(sh); got != want {
			t.Errorf("%q:\n%s\nwant:\n%s", in, got, want)
		}
	}
	for _, in := range []string{``, ` `, `{`, `{"a":}`, `{"a":1}{"b":2}`, `[1] x`, `{1:2}`, `nul`} {
		if _, err := FingerprintJSON([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestFingerprintLimits(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
	sh, err := FingerprintJSON([]byte(deep))
	if err != nil {
		t.Fatal(err)
	}
	if !sh.Truncated || len(sh.Fields) != MaxShapeDepth+1 {
		t.Errorf("deep: truncated=%v with %d fields", sh.Truncated, len(sh.Fields))
	}
	// The document after a skipped subtree is still read.
	deep2 := `{"x":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `,"y":1}`
	sh, err = FingerprintJSON([]byte(deep2))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fields(sh), "$.y number") {
		t.Errorf("after a deep subtree: %s", fields(sh))
	}
	var wide strings.Builder
	wide.WriteString("{")
	for i := 0; i < 3*MaxShapeFields; i++ {
		if i > 0 {
			wide.WriteString(",")
		}
		wide.WriteString(`"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i) + `":1`)
	}
	wide.WriteString("}")
	sh, err = FingerprintJSON([]byte(wide.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !sh.Truncated || len(sh.Fields) != MaxShapeFields {
		t.Errorf("wide: truncated=%v with %d fields", sh.Truncated, len(sh.Fields))
	}
	long := `{"` + strings.Repeat("가", 200) + `":1}`
	sh, err = FingerprintJSON([]byte(long))
	if err != nil {
		t.Fatal(err)
	}
	if p := sh.Fields[1].Path; len(p) > maxKeyBytes+20 || !strings.HasSuffix(p, `…"]`) {
		t.Errorf("long key path %q (%d bytes)", p, len(p))
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestFingerprintXML(t *testing.T) {
	body := `<?xml version="1.0" encoding="UTF-8"?>
<response xmlns:x="urn:x"><header><resultCode>00</resultCode><resultMsg>NORMAL SERVICE.</resultMsg></header>
<body><items><item><basDt>20261127</basDt><clpr>2500.1</clpr><note/></item>
<item x:id="2"><basDt>20261127</basDt><clpr>812.5</clpr><note>n</note></item></items><totalCount>2</totalCount></body></response>`
	sh, err := FingerprintXML([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := `/response element
/response/body element
/response/body/items element
/response/body/items/item element
/response/body/items/item/@id text
/response/body/items/item/basDt text
/response/body/items/item/clpr text
/response/body/items/item/note empty|text
/response/body/totalCount text
/response/header element
/response/header/resultCode text
/response/header/resultMsg text
`
	if got := fields(sh); got != want {
		t.Errorf("fields:\n%s\nwant:\n%s", got, want)
	}
	// data.go.kr's gateway error, in EUC-KR by declaration: names are read.
	gw := `<?xml version="1.0" encoding="EUC-KR"?><OpenAPI_ServiceResponse><cmmMsgHeader><errMsg>SERVICE ERROR</errMsg><returnReasonCode>22</returnReasonCode></cmmMsgHeader></OpenAPI_ServiceResponse>`
	sh, err = FingerprintXML([]byte(gw))
	if err != nil {
		t.Fatal(err)
	}
	if len(sh.Fields) != 4 {
		t.Errorf("gateway error: %s", fields(sh))
	}
	for _, in := range []string{``, `   `, `<a>`, `<a></b>`, `<a/><b/>`, `x<a/>`, `<a/>x`, `</a>`, `<a><b></a>`} {
		if _, err := FingerprintXML([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	deep := strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100)
	sh, err = FingerprintXML([]byte(deep))
	if err != nil || !sh.Truncated || len(sh.Fields) != MaxShapeDepth {
		t.Errorf("deep XML: %v truncated=%v fields=%d", err, sh.Truncated, len(sh.Fields))
	}
}

func TestFingerprintBody(t *testing.T) {
	for _, tc := range []struct{ ct, body, first string }{
		{"application/json;charset=UTF-8", `{"a":1}`, "$"},
		{"text/xml", `<a/>`, "/a"},
		{"", ` [1]`, "$"},
		{"text/plain", `<a/>`, "/a"},
	} {
		sh, err := FingerprintBody(tc.ct, []byte(tc.body))
		if err != nil || sh.Fields[0].Path != tc.first {
			t.Errorf("%s %q: %v %v", tc.ct, tc.body, err, sh)
		}
	}
	if _, err := FingerprintBody("text/plain", []byte("hello")); err == nil || !strings.Contains(err.Error(), "neither JSON nor XML") {
		t.Errorf("plain text: %v", err)
	}
	// An error page is never a dataset's shape, even well-formed as XML
	// and whatever its content type says.
	for _, ct := range []string{"text/html", "application/xhtml+xml", "text/xml", ""} {
		for _, body := range []string{
			"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>",
			"\n<!DOCTYPE html>\n<html><body><p>maintenance</p></body></html>",
		} {
			if sh, err := FingerprintBody(ct, []byte(body)); err == nil || !strings.Contains(err.Error(), "HTML page") {
				t.Errorf("%s %q: %v %v", ct, body, sh, err)
			}
		}
	}
}

func TestDiffShapes(t *testing.T) {
	fp := func(s string) Shape {
		t.Helper()
		sh, err := FingerprintBody("", []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return sh
	}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"same", `{"a":1,"b":"x"}`, `{"b":"y","a":2}`, "no change"},
		{"null is no type", `{"a":1}`, `{"a":null}`, "no change"},
		{"empty array", `{"rows":[{"a":1}]}`, `{"rows":[]}`, "1 field removed ($.rows.a)"},
		{"single item as object", `{"item":[{"a":"1"},{"a":"2"}]}`, `{"item":{"a":"3"}}`, "no change"},
		{"added", `{"a":1}`, `{"a":1,"b":2,"c":{"d":true}}`, "3 fields added ($.b, $.c, $.c.d)"},
		{"removed and retyped", `{"a":1,"b":2}`, `{"a":"1"}`, "1 field removed ($.b), 1 field retyped ($.a number → string)"},
		{"xml", `<r><a>1</a><b/></r>`, `<r><a><x>1</x></a></r>`, "1 field added ($.r/a/x), 1 field removed (/r/b), 1 field retyped (/r/a text → element)"},
	} {
		got := DiffShapes(fp(tc.old), fp(tc.new)).String()
		want := strings.Replace(tc.want, "$.r/a/x", "/r/a/x", 1)
		if got != want {
			t.Errorf("%s: %s, want %s", tc.name, got, want)
		}
	}
	var many ShapeDiff
	for i := 0; i < 7; i++ {
		many.Added = append(many.Added, Field{Path: itoa(i)})
	}
	if got := many.String(); got != "7 fields added (0, 1, 2, 3, 4, …)" {
		t.Errorf("many: %s", got)
	}
}

// FuzzFingerprint: arbitrary bytes as JSON and XML never panic, give the
// same shape twice, and any valid JSON value has a shape.
func FuzzFingerprint(f *testing.F) {
	f.Add([]byte(`{"response":{"body":{"items":{"item":[{"basDt":"20261127"}]}}}}`))
	f.Add([]byte(`<OpenAPI_ServiceResponse><cmmMsgHeader><errMsg>SERVICE ERROR</errMsg></cmmMsgHeader></OpenAPI_ServiceResponse>`))
	f.Add([]byte(`[{"market":"KRW-BTC","candle_date_time_utc":"2026-11-29T00:00:00","trade_price":1.5e8}]`))
	f.Add([]byte(`{"StatisticSearch":{"list_total_count":1,"row":[{"TIME":"202610","DATA_VALUE":"3.5","WGT":null}]}}`))
	f.Add([]byte(`<?xml version="1.0" encoding="EUC-KR"?><a b="1"><c/></a>`))
	f.Add([]byte(`{"a":[[[[[[]]]]]]}`))
	f.Add([]byte("<a><![CDATA[x]]><!-- c --><?pi x?></a>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		j1, err1 := FingerprintJSON(data)
		j2, err2 := FingerprintJSON(data)
		if (err1 == nil) != (err2 == nil) || j1.Fingerprint() != j2.Fingerprint() {
			t.Fatal("JSON fingerprint not deterministic")
		}
		if json.Valid(data) && err1 != nil {
			t.Fatalf("valid JSON refused: %v", err1)
		}
		if err1 == nil && len(j1.Fields) == 0 {
			t.Fatal("a JSON value without fields")
		}
		x1, err1 := FingerprintXML(data)
		x2, err2 := FingerprintXML(data)
		if (err1 == nil) != (err2 == nil) || x1.Fingerprint() != x2.Fingerprint() {
			t.Fatal("XML fingerprint not deterministic")
		}
		for _, sh := range []Shape{j1, x1} {
			if len(sh.Fields) > MaxShapeFields {
				t.Fatalf("%d fields", len(sh.Fields))
			}
			for i, fl := range sh.Fields {
				if fl.Path == "" || (i > 0 && sh.Fields[i-1].Path >= fl.Path) {
					t.Fatalf("fields not sorted and unique: %v", sh.Fields)
				}
			}
		}
		_ = DiffShapes(j1, x1).String()
		_, _ = FingerprintBody("", data)
	})
}
