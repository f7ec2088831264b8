package upbit

import (
	"fmt"
	"strconv"
	"strings"
)

// RemainingReq is the Remaining-Req header UPBIT sends with every answer:
// "group=candles; min=1800; sec=9". Sec is what is left of the group's
// budget in the current second; Min is fixed and deprecated.
type RemainingReq struct {
	Group  string // rate-limit group; may contain hyphens ("order-cancel-all")
	Sec    int    // calls left in the current second
	Min    int    // the deprecated per-minute figure
	HasMin bool   // whether the header carried min
}

// ParseRemainingReq parses a Remaining-Req header value. Fields may come in
// any order, separated by ';' with any spacing, names in any case; group
// and sec are required, min is optional. Unknown fields are ignored.
func ParseRemainingReq(s string) (RemainingReq, error) {
	var r RemainingReq
	hasGroup, hasSec := false, false
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			return RemainingReq{}, fmt.Errorf("parsing Remaining-Req %q: field %q is not name=value", s, part)
		}
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		switch name {
		case "group":
			if value == "" || strings.ContainsAny(value, " \t=") {
				return RemainingReq{}, fmt.Errorf("parsing Remaining-Req %q: bad group %q", s, value)
			}
			r.Group, hasGroup = value, true
		case "sec", "min":
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 {
				return RemainingReq{}, fmt.Errorf("parsing Remaining-Req %q: %s=%q is not a count", s, name, value)
			}
			if name == "sec" {
				r.Sec, hasSec = n, true
			} else {
				r.Min, r.HasMin = n, true
			}
		}
	}
	if !hasGroup || !hasSec {
		return RemainingReq{}, fmt.Errorf("parsing Remaining-Req %q: group and sec are required", s)
	}
	return r, nil
}
