package datago

import (
	"strings"
	"testing"
)

func TestPageCounts(t *testing.T) {
	item := `{"basDt":"20240102","idxNm":"코스피 \"totalCount\":99 <totalCount>98</totalCount>","clpr":"2655.28"}`
	items := strings.Repeat(item+",", 60) + item
	big := `{"response":{"header":{"resultCode":"00","resultMsg":"NORMAL SERVICE."},"body":{"items":{"item":[` + items +
		`]},"numOfRows":61,"pageNo":2,"totalCount":200}}}`
	head, tail := big[:4096], big[len(big)-4096:]
	tests := []struct {
		name              string
		head, tail        string
		total, page, rows int64
		ok                bool
	}{
		{"JSON, counts after the items", head, tail, 200, 2, 61, true},
		{"JSON, counts in the head", `{"response":{"body":{"totalCount":"7","pageNo":"1","numOfRows":"10","items":""}}}`, "", 7, 1, 10, true},
		{"XML, counts after the items", `<?xml version="1.0"?><response><header><resultCode>00</resultCode></header><body><items><item><a>` +
			strings.Repeat("x", 5000), `</a></item></items><numOfRows>50</numOfRows><pageNo>3</pageNo><totalCount>151</totalCount></body></response>`, 151, 3, 50, true},
		{"no totalCount anywhere", `{"response":{"body":{"items":{"item":[`, `]}}}}`, 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			total, page, rows, ok := pageCounts([]byte(tt.head), []byte(tt.tail))
			if total != tt.total || page != tt.page || rows != tt.rows || ok != tt.ok {
				t.Errorf("pageCounts = %d, %d, %d, %v; want %d, %d, %d, %v", total, page, rows, ok, tt.total, tt.page, tt.rows, tt.ok)
			}
		})
	}
}

func FuzzPageCounts(f *testing.F) {
	f.Add([]byte(`{"response":{"body":{"totalCount":7}}}`), []byte(`"pageNo":1,"totalCount":9}}}`))
	f.Add([]byte(`<response><body>`), []byte(`<totalCount>5</totalCount></body></response>`))
	f.Fuzz(func(t *testing.T, head, tail []byte) {
		total, _, _, ok := pageCounts(head, tail)
		if !ok && total != 0 {
			t.Errorf("total %d without ok", total)
		}
	})
}
