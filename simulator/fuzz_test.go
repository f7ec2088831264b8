package simulator

import "testing"

func FuzzParseFault(f *testing.F) {
	for _, s := range []string{
		"provider=kis,error-rate=0.1",
		"provider=fred,latency=20ms,jitter=10ms",
		"provider=ecos,quantiles=1ms/5ms/50ms",
		"provider=upbit,slow-body=2048,truncate-after=100,reset-rate=0.05",
		"provider=datago,down",
		"provider=kis,reject-at=0.5,dataset=x",
		"down=maybe", ",,,", "=", "provider",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fault, err := ParseFault(s)
		if err != nil {
			return
		}
		if verr := fault.Validate(); verr != nil {
			t.Fatalf("ParseFault(%q) returned an invalid fault: %v", s, verr)
		}
	})
}
