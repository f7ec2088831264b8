package simulator

import (
	"crypto/sha256"
	"strings"

	"github.com/sluicehq/sluice/registry"
)

// Alphabets of fake credentials.
const (
	AlnumLower = "abcdefghijklmnopqrstuvwxyz0123456789"
	AlnumMixed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	AlnumUpper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	Base64Std  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
)

// TestCredentials returns deterministic fake credential values for every
// environment variable named in every provider's Auth.Credentials, shaped
// like the real ones so that connectors exercise their real encoding: each
// simulated provider (Registration.Credential) says the shape of its
// roles (KIS: an app key "PS" + 34 letters and digits and a 180-character
// base64 secret; ECOS 20 upper-case letters and digits; FRED 32 lower-case;
// UPBIT 40 letters and digits; data.go.kr an 88-character base64 decoding
// key holding + and /). A provider whose connector is not linked gets 32
// letters and digits.
//
// The values depend only on the provider's connector and the variable
// name, so two providers naming the same variable share a value (the
// first provider's shape). They are simulator test keys, not secrets.
func TestCredentials(reg *registry.Registry) map[string]string {
	out := map[string]string{}
	if reg == nil {
		return out
	}
	for _, p := range reg.Providers {
		r, _ := registration(connectorOf(p))
		for _, role := range p.Auth.Roles() {
			env := p.Auth.Credentials[role]
			if env == "" {
				continue
			}
			if _, done := out[env]; done {
				continue
			}
			v := ""
			if r.Credential != nil {
				v = r.Credential(role, env)
			}
			if v == "" {
				v = FakeCredential(env, AlnumMixed, 32)
			}
			out[env] = v
		}
	}
	return out
}

// FakeCredential derives n characters of alphabet from seed (an
// environment variable name) by hashing.
func FakeCredential(seed, alphabet string, n int) string {
	var b strings.Builder
	b.Grow(n)
	block := sha256.Sum256([]byte("sluice-simulator-credential:" + seed))
	for i := 0; b.Len() < n; i++ {
		if i == len(block) {
			block = sha256.Sum256(block[:])
			i = 0
		}
		b.WriteByte(alphabet[int(block[i])%len(alphabet)])
	}
	return b.String()
}

// connectorOf is the connector a provider is simulated by: its declared
// (or defaulted) connector, else its id.
func connectorOf(p *registry.Provider) string {
	if p.Connector != "" {
		return p.Connector
	}
	return p.ID
}

// Shaped returns a Registration.Credential giving every role n characters
// of alphabet.
func Shaped(alphabet string, n int) func(role, env string) string {
	return func(_, env string) string { return FakeCredential(env, alphabet, n) }
}
