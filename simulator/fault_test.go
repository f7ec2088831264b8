package simulator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseFault(t *testing.T) {
	f, err := ParseFault("provider=kis, dataset=kis-index-0001-kospi,error-rate=0.25,error-status=502,latency=20ms,jitter=5ms,slow-body=2048,truncate-after=100,reset-rate=0.1,down,reject-at=0.5")
	if err != nil {
		t.Fatal(err)
	}
	want := Fault{Provider: "kis", Dataset: "kis-index-0001-kospi", ErrorRate: 0.25, ErrorStatus: 502,
		Latency: Latency{Fixed: 20 * time.Millisecond, Jitter: 5 * time.Millisecond}, SlowBody: 2048, TruncateAfter: 100,
		ResetRate: 0.1, Down: true, RejectAtFraction: 0.5}
	if !faultEqual(f, want) {
		t.Errorf("got %+v\nwant %+v", f, want)
	}
	f, err = ParseFault("provider=fred,quantiles=1ms/5ms/50ms")
	if err != nil || len(f.Latency.Quantiles) != 3 || f.Latency.Quantiles[2] != 50*time.Millisecond {
		t.Errorf("quantiles: %+v %v", f, err)
	}
	for _, bad := range []string{"", "provider=kis,error-rate=2", "provider=kis,bogus=1", "provider=kis,latency=fast",
		"dataset=x", "provider=kis,error-status=404", "provider=kis,reject-at=1", "provider=kis,quantiles=5ms/1ms", "provider=kis,error-rate"} {
		if _, err := ParseFault(bad); err == nil {
			t.Errorf("ParseFault(%q) accepted", bad)
		}
	}
	// JSON round trip.
	b, err := json.Marshal([]Fault{want})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeFaults(strings.NewReader(string(b)))
	if err != nil || len(got) != 1 || !faultEqual(got[0], want) {
		t.Errorf("round trip: %s → %+v %v", b, got, err)
	}
	if !strings.Contains(string(b), `"latency":{"fixed":"20ms","jitter":"5ms"}`) {
		t.Errorf("latency JSON %s", b)
	}
}

func faultEqual(a, b Fault) bool {
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return string(aj) == string(bj)
}

// TestDecodeFaultSpecs: POST /_sim/faults also takes --fault specs, one a
// line, so that a client without the Fault type can inject faults.
func TestDecodeFaultSpecs(t *testing.T) {
	got, err := decodeFaults(strings.NewReader("provider=kis,dataset=d,error-rate=1,error-status=502\n\n  provider=fred,down  \n"))
	if err != nil || len(got) != 2 || got[0].ErrorStatus != 502 || got[0].Dataset != "d" || !got[1].Down || got[1].Provider != "fred" {
		t.Fatalf("specs: %+v %v", got, err)
	}
	if got, err := decodeFaults(strings.NewReader("  \n")); err != nil || len(got) != 0 {
		t.Errorf("no spec: %+v %v", got, err)
	}
	if _, err := decodeFaults(strings.NewReader("provider=kis\nprovider=kis,bogus=1")); err == nil || !strings.Contains(err.Error(), `unknown key "bogus"`) {
		t.Errorf("a bad spec: %v", err)
	}
}

func TestParseFaultShapeAndWindow(t *testing.T) {
	now := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	f, err := ParseFaultAt("provider=kis,dataset=d,shape=rt-cd,code=7,msg-cd=KIOK0007,message=m,status=200,shape-rate=0.5,times=2,from=+10s,until=2026-12-04T16:00:00Z", now)
	if err != nil {
		t.Fatal(err)
	}
	want := Fault{Provider: "kis", Dataset: "d", Shape: "rt-cd", Code: "7", MsgCode: "KIOK0007", Message: "m", Status: 200, ShapeRate: 0.5, Times: 2,
		From: now.Add(10 * time.Second), Until: time.Date(2026, 12, 4, 16, 0, 0, 0, time.UTC)}
	if !faultEqual(f, want) {
		t.Errorf("got %+v\nwant %+v", f, want)
	}
	if !f.active(now.Add(10*time.Second)) || f.active(now) || f.active(want.Until) {
		t.Error("window bounds: from is inclusive, until exclusive")
	}
	b, _ := json.Marshal(f)
	got, err := decodeFaults(strings.NewReader(string(b)))
	if err != nil || len(got) != 1 || !faultEqual(got[0], want) {
		t.Errorf("round trip: %s → %+v %v", b, got, err)
	}
}
