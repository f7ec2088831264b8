package codec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// testKey is a fixed key for tests (base64 of 32 bytes).
func testKey(b byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, KeySize))
}

func mustRing(t *testing.T, text string) *Keyring {
	t.Helper()
	r, err := ParseKeyring("test", text)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustCodec(t *testing.T, text string) *Codec {
	t.Helper()
	c, err := New(mustRing(t, text))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const canary = "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzUxMiJ9.canary-token"

func TestRoundTripHidesEverything(t *testing.T) {
	c := mustCodec(t, testKey(1))
	dc := c.DataConverter()
	p, err := dc.ToPayload(map[string]string{"access_token": canary})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.Metadata[MetadataEncoding]); got != EncodingEncrypted {
		t.Fatalf("encoding %q", got)
	}
	if string(p.Metadata[MetadataKeyID]) != c.Keyring().PrimaryID() {
		t.Errorf("key id %q, want %q", p.Metadata[MetadataKeyID], c.Keyring().PrimaryID())
	}
	raw, _ := p.Marshal()
	for _, leak := range []string{canary, "access_token", "json/plain"} {
		if bytes.Contains(raw, []byte(leak)) {
			t.Errorf("the sealed payload shows %q", leak)
		}
	}
	var back map[string]string
	if err := dc.FromPayload(p, &back); err != nil || back["access_token"] != canary {
		t.Fatalf("round trip: %v %v", back, err)
	}
	// Two seals of one value differ (random nonces).
	q, _ := dc.ToPayload(map[string]string{"access_token": canary})
	if bytes.Equal(p.Data, q.Data) {
		t.Error("two encryptions of one payload are equal")
	}
}

func TestRotation(t *testing.T) {
	old := mustCodec(t, "2026-01:"+testKey(1))
	sealed, err := old.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"x"`)}})
	if err != nil {
		t.Fatal(err)
	}
	rotated := mustCodec(t, "2026-07:"+testKey(2)+"\n2026-01:"+testKey(1))
	if got := rotated.Keyring().PrimaryID(); got != "2026-07" {
		t.Fatalf("primary %q", got)
	}
	out, err := rotated.Decode(sealed)
	if err != nil || string(out[0].Data) != `"x"` {
		t.Fatalf("the rotated ring cannot open the old payload: %v", err)
	}
	fresh, _ := rotated.Encode(out)
	if string(fresh[0].Metadata[MetadataKeyID]) != "2026-07" {
		t.Errorf("new payloads are sealed with %q", fresh[0].Metadata[MetadataKeyID])
	}
	// Once the old key is removed, its payloads are refused by id.
	newOnly := mustCodec(t, "2026-07:"+testKey(2))
	if _, err := newOnly.Decode(sealed); err == nil || !strings.Contains(err.Error(), `"2026-01"`) {
		t.Errorf("decoding with the old key gone: %v", err)
	}
}

func TestTamperingIsDetected(t *testing.T) {
	c := mustCodec(t, "a:"+testKey(1)+",b:"+testKey(2))
	sealed, _ := c.Encode([]*commonpb.Payload{{Data: []byte("secret")}})
	flip := func(mod func(p *commonpb.Payload)) error {
		p := &commonpb.Payload{Metadata: map[string][]byte{}, Data: bytes.Clone(sealed[0].Data)}
		for k, v := range sealed[0].Metadata {
			p.Metadata[k] = v
		}
		mod(p)
		_, err := c.Decode([]*commonpb.Payload{p})
		return err
	}
	if err := flip(func(p *commonpb.Payload) { p.Data[len(p.Data)-1] ^= 1 }); err == nil {
		t.Error("a flipped bit decoded")
	}
	// The key id is authenticated: the same ciphertext under another id
	// (even one whose key is in the ring) fails.
	if err := flip(func(p *commonpb.Payload) { p.Metadata[MetadataKeyID] = []byte("b") }); err == nil {
		t.Error("a payload moved to another key id decoded")
	}
	if err := flip(func(p *commonpb.Payload) { p.Data = p.Data[:5] }); err == nil {
		t.Error("a truncated payload decoded")
	}
	if err := flip(func(p *commonpb.Payload) { delete(p.Metadata, MetadataKeyID) }); err == nil {
		t.Error("a payload without key id decoded")
	}
	for _, err := range []error{flip(func(p *commonpb.Payload) { p.Data[len(p.Data)-1] ^= 1 })} {
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("error quotes the plaintext: %v", err)
		}
	}
}

func TestPlainPayloadsPassThrough(t *testing.T) {
	c := mustCodec(t, testKey(1))
	in := []*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`1`)}}
	out, err := c.Decode(in)
	if err != nil || out[0] != in[0] {
		t.Errorf("plain payload: %v %v", out, err)
	}
}

func TestFailureConverterSealsMessages(t *testing.T) {
	c := mustCodec(t, testKey(1))
	f := c.FailureConverter().ErrorToFailure(&testErr{"refused " + canary})
	raw, _ := f.Marshal()
	if bytes.Contains(raw, []byte(canary)) || f.GetMessage() == "refused "+canary {
		t.Errorf("failure shows the message in clear: %v", f)
	}
	back := c.FailureConverter().FailureToError(f)
	if !strings.Contains(back.Error(), canary) {
		t.Errorf("failure does not decode back: %v", back)
	}
}

type testErr struct{ s string }

func (e *testErr) Error() string { return e.s }

func TestParseKeyringErrors(t *testing.T) {
	secretish := testKey(7)
	for _, tc := range []struct{ text, want string }{
		{"", "no key"},
		{"# only a comment\n\n", "no key"},
		{"not base64 !!!", "entry 1: the key (14 characters) is not base64"},
		{base64.StdEncoding.EncodeToString([]byte("short")), "entry 1: the key is 5 bytes, want 32"},
		{"a:" + secretish + "\na:" + testKey(8), `entry 2: key id "a" appears twice`},
		{"bad id:" + secretish, `key id "bad id"`},
		{":" + secretish, `key id ""`},
		{strings.Repeat("x", maxKeyringText+1), "more than a key ring holds"},
	} {
		_, err := ParseKeyring("SLUICE_CODEC_KEY", tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseKeyring(%.30q) = %v, want %q", tc.text, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secretish) || !strings.Contains(err.Error(), "SLUICE_CODEC_KEY") {
			t.Errorf("error %q quotes the key or does not name the source", err)
		}
	}
	r := mustRing(t, "# ring\n"+testKey(1)+"\n  named:"+testKey(2)+"  \n")
	if ids := r.IDs(); len(ids) != 2 || ids[0] != Fingerprint(bytes.Repeat([]byte{1}, KeySize)) || ids[1] != "named" {
		t.Errorf("ids %v", ids)
	}
	if s := r.String() + r.GoString(); strings.Contains(s, testKey(1)) {
		t.Errorf("String shows a key: %s", s)
	}
}

// FuzzParseKeyring: no text panics the parser, an error never quotes a
// key-sized run of the input, and an accepted ring seals and opens.
func FuzzParseKeyring(f *testing.F) {
	for _, s := range []string{testKey(1), "a:" + testKey(1) + "," + testKey(2), "#\n", "a:b:c", ":::", "\x00", testKey(1)[:20]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := ParseKeyring("fuzz", text)
		if err != nil {
			for _, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ',' }) {
				if len(line) >= 20 && strings.Contains(err.Error(), line) {
					t.Fatalf("error %q quotes input %q", err, line)
				}
			}
			return
		}
		c, err := New(r)
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.Encode([]*commonpb.Payload{{Data: []byte("x")}})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := c.Decode(p); err != nil || string(out[0].Data) != "x" {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzDecode: hostile payloads never panic Decode nor decode to anything
// but an error, unless they are genuinely sealed. Genuineness is decided
// by opening the data with the key itself, independently of Decode, and
// not by comparing with a payload sealed in this process: fuzz workers are
// other processes, each sealing its own (random nonce) payload, so the
// corpus entry sealed by the coordinator is no longer "the" genuine one
// in a worker.
func FuzzDecode(f *testing.F) {
	c, _ := New(func() *Keyring { r, _ := ParseKeyring("fuzz", "a:"+testKey(1)); return r }())
	sealed, _ := c.Encode([]*commonpb.Payload{{Data: []byte("x")}})
	aead, err := newAEAD(bytes.Repeat([]byte{1}, KeySize))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("a"), sealed[0].Data)
	f.Add([]byte(""), []byte{})
	f.Add([]byte("zz"), bytes.Repeat([]byte{0}, 40))
	f.Fuzz(func(t *testing.T, id, data []byte) {
		p := &commonpb.Payload{Metadata: map[string][]byte{MetadataEncoding: []byte(EncodingEncrypted), MetadataKeyID: id}, Data: data}
		out, err := c.Decode([]*commonpb.Payload{p})
		genuine := false
		if string(id) == "a" && len(data) >= nonceSize+aead.Overhead() {
			if plain, err := aead.Open(nil, data[:nonceSize], data[nonceSize:], aad("a")); err == nil {
				genuine = proto.Unmarshal(plain, &commonpb.Payload{}) == nil
			}
		}
		if err == nil && !genuine {
			t.Fatalf("decoded a forged payload to %v", out)
		}
		if err != nil && genuine {
			t.Fatalf("the genuine payload failed: %v", err)
		}
	})
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "codec.key")
	r, created, err := EnsureKeyFile(path)
	if err != nil || !created {
		t.Fatalf("EnsureKeyFile: %v %v", created, err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v", st.Mode().Perm())
	}
	if st, _ := os.Stat(filepath.Dir(path)); st.Mode().Perm() != 0o700 {
		t.Errorf("key directory mode %v", st.Mode().Perm())
	}
	again, created, err := EnsureKeyFile(path)
	if err != nil || created || again.PrimaryID() != r.PrimaryID() {
		t.Errorf("second EnsureKeyFile: %v %v %v", again, created, err)
	}
	// A key file others can read is refused, naming it and the fix.
	wide := filepath.Join(dir, "wide.key")
	os.WriteFile(wide, []byte(testKey(3)+"\n"), 0o644)
	os.Chmod(wide, 0o644)
	if _, err := ReadKeyFile(wide); err == nil || !strings.Contains(err.Error(), "chmod 600 "+wide) {
		t.Errorf("wide key file: %v", err)
	}
	if _, err := ReadKeyFile(dir); err == nil {
		t.Error("a directory read as a key file")
	}

	t.Setenv(EnvKey, "")
	t.Setenv(EnvKeyFile, "")
	if _, err := LoadKeyring(""); err != ErrNoKey {
		t.Errorf("nothing set: %v", err)
	}
	t.Setenv(EnvKeyFile, path)
	if got, err := LoadKeyring(""); err != nil || got.PrimaryID() != r.PrimaryID() {
		t.Errorf("from %s: %v %v", EnvKeyFile, got, err)
	}
	if got, err := LoadKeyring(path); err != nil || got.PrimaryID() != r.PrimaryID() {
		t.Errorf("from a named file: %v %v", got, err)
	}
	t.Setenv(EnvKey, "env:"+testKey(4))
	if _, err := LoadKeyring(""); err == nil || !strings.Contains(err.Error(), "set one") {
		t.Errorf("both %s and %s: %v", EnvKey, EnvKeyFile, err)
	}
	t.Setenv(EnvKeyFile, "")
	if got, err := LoadKeyring(""); err != nil || got.PrimaryID() != "env" {
		t.Errorf("from %s: %v %v", EnvKey, got, err)
	}
	if strings.Contains(fmt.Sprint(LoadKeyring(path)), testKey(4)) {
		t.Error("an error quotes the key")
	}
}

var _ converter.PayloadCodec = (*Codec)(nil)
