package wire

import "testing"

// FuzzExtract feeds arbitrary bytes to Extract under each provider's row
// facts: it never panics, and every row it returns has its period.
func FuzzExtract(f *testing.F) {
	specs := []Rows{ecosRows, fredRows, datagoRows, upbitRows,
		{JSON: "output2", Period: "stck_bsop_date", PeriodFormat: YYYYMMDD, Values: []string{"bstp_nmix_prpr"}}}
	for _, s := range []string{
		`{"StatisticSearch":{"row":[{"TIME":"202401","DATA_VALUE":"1"}]}}`,
		`<observations><observation date="2025-01-01" value="1"/></observations>`,
		`{"response":{"body":{"items":{"item":{"basDt":"20250101"}}}}}`,
		`[{"candle_date_time_utc":"2024-01-07T00:00:00","trade_price":1}]`,
		`{"output2":[{"stck_bsop_date":"20250310","bstp_nmix_prpr":"2500.00"}]}`,
		`<response><body><items><item><basDt>20250101</basDt></item></items></body></response>`,
		`<a><b>`, `{"a":`, "\xef\xbb\xbf[]", `<?xml version="1.0" encoding="latin1"?><a/>`,
	} {
		for i := range specs {
			f.Add([]byte(s), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		spec := specs[int(which)%len(specs)]
		rows, err := Extract(body, spec)
		if err != nil && rows != nil {
			t.Fatalf("rows %v with error %v", rows, err)
		}
		for i, r := range rows {
			if r.Period == "" || r.Values == nil || len(r.Keys) != len(spec.Keys) {
				t.Fatalf("row %d incomplete: %+v", i, r)
			}
		}
	})
}

// FuzzParse checks every format on arbitrary text: no panic, and what
// parses writes back to the same text (the formats are canonical) except
// for ISODateTime's optional Z.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"20240229", "2024-02-29", "2024-02-29T23:59:59Z", "20240229235959", "2024", "2024S2", "2024Q4", "202402", "202402S2", "0000Q1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, fm := range Formats {
			p, err := fm.Parse(s)
			if err != nil {
				continue
			}
			w := fm.Write(p)
			if fm == ISODateTime && len(s) > 0 && s[len(s)-1] == 'Z' {
				w += "Z"
			}
			if w != s {
				t.Fatalf("%s: %q parsed as %v writes %q", fm, s, p, w)
			}
		}
	})
}
