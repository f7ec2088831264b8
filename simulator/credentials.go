package simulator

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/sluicehq/sluice/registry"
)

const (
	alnumLower = "abcdefghijklmnopqrstuvwxyz0123456789"
	alnumMixed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	alnumUpper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	base64Std  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
)

// TestCredentials returns deterministic fake credential values for every
// environment variable named in every provider's Auth.Credentials, shaped
// like the real ones so that connectors exercise their real encoding:
//
//   - KIS app key: "PS" + 34 letters and digits (36 characters); app
//     secret: 180 base64 characters.
//   - FRED API key (api_key_query): 32 lower-case letters and digits.
//   - ECOS API key (api_key_path): 20 upper-case letters and digits.
//   - UPBIT access and secret keys: 40 letters and digits.
//   - data.go.kr service key (the decoding key): 88 base64 characters
//     ending in "==" and containing '+' and '/', so a key encoded twice or
//     not at all is rejected as the portal does.
//   - anything else: 32 letters and digits.
//
// The values depend only on the variable name, so two providers naming the
// same variable share a value. They are simulator test keys, not secrets.
func TestCredentials(reg *registry.Registry) map[string]string {
	out := map[string]string{}
	if reg == nil {
		return out
	}
	for _, p := range reg.Providers {
		for _, role := range p.Auth.Roles() {
			env := p.Auth.Credentials[role]
			if env == "" {
				continue
			}
			if _, done := out[env]; done {
				continue
			}
			out[env] = fakeCredential(p.Auth.Strategy, role, env)
		}
	}
	return out
}

func fakeCredential(strategy, role, env string) string {
	switch {
	case strategy == registry.AuthKISOAuth2 && role == "app_key":
		return "PS" + fakeChars(env, alnumMixed, 34)
	case strategy == registry.AuthKISOAuth2 && role == "app_secret":
		return fakeChars(env, base64Std, 180)
	case strategy == registry.AuthAPIKeyQuery:
		return fakeChars(env, alnumLower, 32)
	case strategy == registry.AuthAPIKeyPath:
		return fakeChars(env, alnumUpper, 20)
	case strategy == registry.AuthUpbitJWT:
		return fakeChars(env, alnumMixed, 40)
	case strategy == registry.AuthServiceKey:
		raw := []byte(fakeChars(env, alnumMixed, 64))
		key := base64.StdEncoding.EncodeToString(raw) // 88 characters, ends in "=="
		// Make sure the characters that break naive encoding are present.
		b := []byte(key)
		b[10], b[40] = '+', '/'
		return string(b)
	}
	return fakeChars(env, alnumMixed, 32)
}

// fakeChars derives n characters of alphabet from seed by hashing.
func fakeChars(seed, alphabet string, n int) string {
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
