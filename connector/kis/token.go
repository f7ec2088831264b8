package kis

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/ratelimit/permit"
)

// Token lifetime rules.
const (
	// RefreshBefore is how long before its expiry a token is replaced.
	RefreshBefore = 60 * time.Minute
	// MinIssueInterval is the least time between two token requests for
	// one app key (EGW00133 otherwise).
	MinIssueInterval = time.Minute
	// defaultLifetime applies when the answer names no expiry.
	defaultLifetime = 24 * time.Hour
	// maxTokenAnswer bounds the token answer read.
	maxTokenAnswer = 64 << 10
)

// TokenPath is the token endpoint.
const TokenPath = "/oauth2/tokenP"

// TokenKey is the store key of an app key at a host: an HMAC-SHA256 of
// both keyed with the app secret. It names a file or a token-keeper
// workflow id, where others can read it: unkeyed, a hash of the app key
// would confirm a guess (or a leaked list) of app keys; keyed with the
// secret, it confirms nothing without it. The mock and real hosts never
// share a token, and a new secret starts a new key.
func TokenKey(baseURL, appKey, appSecret string) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write([]byte("kis token\x00" + baseURL + "\x00" + appKey))
	return "kis-" + hex.EncodeToString(m.Sum(nil)[:16])
}

// usable reports whether t can be sent now: set, not the rejected one and
// not yet within RefreshBefore of its expiry.
func usable(t connector.Token, now time.Time, rejected string) bool {
	return t.AccessToken != "" && t.AccessToken != rejected && now.Before(t.ExpiresAt.Add(-RefreshBefore))
}

// token returns an access token for the app key: the cached one, else the
// stored one, else one issued under the store's lock by exactly one caller
// across every process. rejected names a token the gateway refused, which
// is never returned again. fresh reports that this call issued the token.
func (c *Connector) token(ctx context.Context, appKey, appSecret, rejected string) (tok string, fresh bool, err error) {
	if rejected != "" {
		c.forget(rejected)
	}
	if t, ok := c.memory(rejected); ok {
		return t, false, nil
	}
	// Single flight: one refresh at a time in this process; the others wait
	// here and then find the fresh token in memory.
	select {
	case c.flight <- struct{}{}:
	case <-ctx.Done():
		return "", false, fmt.Errorf("waiting for the kis token: %w", ctx.Err())
	}
	defer func() { <-c.flight }()
	if t, ok := c.memory(rejected); ok {
		return t, false, nil
	}
	key := TokenKey(c.Base().BaseURL(), appKey, appSecret)
	log := c.Base().Logger()
	rejected = c.rejectedToken(rejected)
	if st, ok, err := c.store.Load(ctx, key); err != nil {
		log.Warn("reading the kis token store", "error", err)
	} else if ok && usable(st, c.Base().Now(), rejected) {
		c.remember(st)
		return st.AccessToken, false, nil
	}
	var out connector.Token
	var reason string
	err = c.store.WithLock(ctx, key, func(ctx context.Context) error {
		st, ok, err := c.store.Load(ctx, key)
		if err != nil {
			return fmt.Errorf("loading kis token: %w", err)
		}
		now := c.Base().Now()
		if ok && usable(st, now, rejected) {
			out = st
			return nil
		}
		stillValid := ok && st.Valid(now) && st.AccessToken != rejected
		if ok && !st.RequestedAt.IsZero() && now.Sub(st.RequestedAt) < MinIssueInterval {
			if stillValid {
				out = st // in its refresh window, but valid: keep using it
				return nil
			}
			wait := MinIssueInterval - now.Sub(st.RequestedAt)
			return c.Base().Fail(permit.Call{Provider: c.Base().Provider().ID, Kind: permit.CallToken}, 0,
				&connector.Error{Class: connector.RateLimited, Code: CodeTokenThrottle, RetryAfter: wait,
					Message: fmt.Sprintf("the kis token was refused and a new one was requested %s ago; the token endpoint allows one request a minute per app key", now.Sub(st.RequestedAt).Round(time.Second))})
		}
		// Record the request before sending it, so that a crash or a failed
		// answer still counts against the once-a-minute rule.
		st.RequestedAt = now
		if err := c.store.Save(ctx, key, st); err != nil {
			return fmt.Errorf("recording the kis token request: %w", err)
		}
		issued, err := c.issue(ctx, appKey, appSecret)
		if err != nil {
			if stillValid {
				log.Warn("refreshing the kis token failed; the current one stays valid until it expires",
					"expires_at", st.ExpiresAt, "error", err)
				out = st
				return nil
			}
			return err
		}
		issued.RequestedAt = now
		if err := c.store.Save(ctx, key, issued); err != nil {
			return fmt.Errorf("saving the kis token: %w", err)
		}
		log.Info("issued kis token", "expires_at", issued.ExpiresAt)
		out, fresh = issued, true
		reason = "none"
		switch {
		case ok && st.AccessToken != "" && st.AccessToken == rejected:
			reason = "rejected"
		case ok && st.AccessToken != "":
			reason = "expiring"
		}
		return nil
	})
	if err != nil {
		var e *connector.Error
		if errors.As(err, &e) || ctx.Err() != nil {
			return "", false, err
		}
		return "", false, fmt.Errorf("getting kis token: %w", err)
	}
	c.remember(out)
	if fresh {
		c.Base().TokenIssued(ctx, connector.TokenIssue{Provider: c.Base().Provider().ID,
			IssuedAt: out.IssuedAt, ExpiresAt: out.ExpiresAt, Reason: reason})
	}
	return out.AccessToken, fresh, nil
}

// WarmToken makes sure the connector holds a usable access token: the
// one in memory or in the token store, else one issued now (under the
// store's lock and the once-a-minute rule, as for a call).
func (c *Connector) WarmToken(ctx context.Context) error {
	b := c.Base()
	appKey, err := b.Credential("app_key")
	if err != nil {
		return err
	}
	appSecret, err := b.Credential("app_secret")
	if err != nil {
		return err
	}
	_, _, err = c.token(ctx, appKey, appSecret, "")
	return err
}

func (c *Connector) memory(rejected string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rejected == "" {
		rejected = c.rejected
	}
	if usable(c.cached, c.Base().Now(), rejected) {
		return c.cached.AccessToken, true
	}
	return "", false
}

// forget marks a token the gateway refused: this process never sends it
// again.
func (c *Connector) forget(tok string) {
	c.mu.Lock()
	c.rejected = tok
	c.mu.Unlock()
}

// rejectedToken returns the token to avoid: the one named, else the last
// one the gateway refused in this process.
func (c *Connector) rejectedToken(rejected string) string {
	if rejected != "" {
		return rejected
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rejected
}

func (c *Connector) remember(t connector.Token) {
	c.Base().Secrets().Add(t.AccessToken)
	c.mu.Lock()
	c.cached = t
	c.mu.Unlock()
}

// issue asks the token endpoint for a new token.
func (c *Connector) issue(ctx context.Context, appKey, appSecret string) (connector.Token, error) {
	body, err := json.Marshal(map[string]string{
		"grant_type": "client_credentials", "appkey": appKey, "appsecret": appSecret,
	})
	if err != nil {
		return connector.Token{}, fmt.Errorf("encoding kis token request: %w", err)
	}
	h := http.Header{}
	h.Set("content-type", "application/json; charset=utf-8")
	call := permit.Call{Provider: c.Base().Provider().ID, Kind: permit.CallToken}
	resp, err := c.Base().Do(ctx, connector.Exchange{Call: call, Method: http.MethodPost,
		URL: c.Base().URL(TokenPath, ""), Header: h, Body: body, Format: "json", Classify: classifyToken})
	if err != nil {
		return connector.Token{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	if err != nil {
		return connector.Token{}, err
	}
	now := c.Base().Now()
	tok, ok := parseTokenAnswer(data, now)
	if !ok {
		return connector.Token{}, c.Base().Fail(call, resp.Status, &connector.Error{Class: connector.Transient,
			Message: "the token answer holds no access_token"})
	}
	c.Base().Secrets().Add(tok.AccessToken)
	if e := expiredAnswer(tok, now); e != nil {
		return connector.Token{}, c.Base().Fail(call, resp.Status, e)
	}
	return tok, nil
}

// expiredAnswer refuses a token the endpoint handed back already expired
// (access_token_token_expired not after now, or expires_in <= 0): it is
// never cached nor sent. The token is not the key: the gateway hands back
// the token it issued earlier in the day, and a clock running ahead makes
// a good token look expired, so the refusal is AuthFailed only once
// confirmed (Confirm) and waits until tokenP may be asked again.
func expiredAnswer(tok connector.Token, now time.Time) *connector.Error {
	if tok.ExpiresAt.After(now) {
		return nil
	}
	return &connector.Error{Class: connector.AuthFailed, Confirm: connector.DefaultConfirm, RetryAfter: MinIssueInterval,
		Message: fmt.Sprintf("the token endpoint answered with a token that expired at %s (now %s); it is not used",
			tok.ExpiresAt.In(kst).Format(time.DateTime), now.In(kst).Format(time.DateTime))}
}

// parseTokenAnswer reads the token endpoint's answer: the access token,
// issued now, and its expiry (see expiry). ok is false when the answer is
// not a JSON object holding an access_token. The answer is never quoted:
// it holds the token.
func parseTokenAnswer(data []byte, now time.Time) (tok connector.Token, ok bool) {
	var a tokenAnswer
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil || a.AccessToken == "" {
		return connector.Token{}, false
	}
	return connector.Token{AccessToken: a.AccessToken, IssuedAt: now, ExpiresAt: expiry(a, now)}, true
}

// maxExpiresIn bounds the expires_in the connector believes: a larger
// value (which would overflow a time.Duration past about 292 years) falls
// back to defaultLifetime.
const maxExpiresIn = 366 * 24 * time.Hour

// expiry reads access_token_token_expired ("2006-01-02 15:04:05", KST)
// and expires_in (seconds from now) and believes the earlier: an answer
// whose expires_in is 0 or negative is expired now, whatever its date
// says. An expires_in beyond maxExpiresIn, or not an integer, is ignored;
// with neither field the token lasts a day.
func expiry(a tokenAnswer, now time.Time) time.Time {
	at, dated := time.Time{}, false
	if t, err := time.ParseInLocation(time.DateTime, strings.TrimSpace(a.Expired), kst); err == nil {
		at, dated = t, true
	}
	if s, err := strconv.ParseInt(a.ExpiresIn.String(), 10, 64); err == nil && s <= int64(maxExpiresIn/time.Second) {
		in := now
		if s > 0 {
			in = now.Add(time.Duration(s) * time.Second)
		}
		if !dated || in.Before(at) {
			at, dated = in, true
		}
	}
	if !dated {
		return now.Add(defaultLifetime)
	}
	return at
}
