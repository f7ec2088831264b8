package kis_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connector"
	"github.com/sluicehq/sluice/connector/connectortest"
	"github.com/sluicehq/sluice/connector/kis"
	"github.com/sluicehq/sluice/connector/tokenstore"
	"github.com/sluicehq/sluice/ratelimit/permit"
	"github.com/sluicehq/sluice/registry"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2025, 2, 3, 0, 30, 0, 0, time.UTC) // 09:30 KST

type env struct {
	reg   *registry.Registry
	ds    *registry.Dataset
	fake  *fakeKIS
	url   string
	clk   *clock
	store string
	log   *connectortest.Log
	lg    func() connector.Options
}

func setup(t *testing.T) *env {
	t.Helper()
	reg := connectortest.Registry(t)
	clk := &clock{t: t0}
	fake, srv := newFakeKIS(t, t0)
	e := &env{reg: reg, ds: reg.Dataset(connectortest.KISDataset), fake: fake, url: srv.URL, clk: clk,
		store: filepath.Join(t.TempDir(), "tokens")}
	log, lg := connectortest.NewLog()
	e.log = log
	e.lg = func() connector.Options {
		st, err := tokenstore.NewFile(e.store)
		if err != nil {
			t.Fatal(err)
		}
		return connector.Options{BaseURL: e.url, Credentials: connectortest.Credentials(), TokenStore: st,
			Logger: lg, Now: clk.Now}
	}
	return e
}

// moveTo sets both clocks.
func (e *env) advance(d time.Duration) {
	e.clk.Add(d)
	e.fake.setNow(e.clk.Now())
}

func (e *env) connector(t *testing.T, mod ...func(*connector.Options)) *kis.Connector {
	t.Helper()
	opts := e.lg()
	for _, m := range mod {
		m(&opts)
	}
	c, err := kis.New(e.reg.Provider("kis"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) request() connector.Request {
	return connector.Request{Dataset: e.ds,
		From: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 1, 31, 0, 0, 0, 0, time.UTC)}
}

func fetchBody(t *testing.T, c *kis.Connector, req connector.Request) (*connector.Response, string, error) {
	t.Helper()
	resp, err := c.Fetch(context.Background(), req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func secrets(e *env) []string {
	out := connectortest.SecretValues()
	e.fake.mu.Lock()
	out = append(out, e.fake.issued...)
	e.fake.mu.Unlock()
	return out
}

func TestFetchSendsTheKISRequest(t *testing.T) {
	e := setup(t)
	c := e.connector(t)
	resp, body, err := fetchBody(t, c, e.request())
	if err != nil {
		t.Fatal(err)
	}
	if body != sampleAnswer {
		t.Errorf("body changed:\n%s", body)
	}
	h := e.fake.lastHeader
	for k, want := range map[string]string{
		"Content-Type": "application/json; charset=utf-8", "Tr_id": "FHKUP03500100", "Custtype": "P",
		"Appkey": connectortest.Secrets["KIS_APP_KEY"], "Appsecret": connectortest.Secrets["KIS_APP_SECRET"],
		"Authorization": "Bearer " + e.fake.issued[0],
	} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if h.Get("Tr_cont") != "" {
		t.Errorf("first page sent tr_cont %q", h.Get("Tr_cont"))
	}
	wantQuery := "FID_COND_MRKT_DIV_CODE=U&FID_INPUT_ISCD=0001&FID_INPUT_DATE_1=20250101&FID_INPUT_DATE_2=20250131&FID_PERIOD_DIV_CODE=D"
	if e.fake.lastRawPath != wantQuery {
		t.Errorf("query = %s\nwant    %s", e.fake.lastRawPath, wantQuery)
	}
	if resp.Ext != "json" || resp.Status != 200 || resp.More {
		t.Errorf("response %+v", resp)
	}
	connectortest.AssertNoSecrets(t, "Response.URL", resp.URL, secrets(e)...)
	connectortest.AssertNoSecrets(t, "log", e.log.String(), secrets(e)...)
}

func TestConcurrentCallersShareOneToken(t *testing.T) {
	e := setup(t)
	c := e.connector(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := fetchBody(t, c, e.request())
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if tokens, data := e.fake.counts(); tokens != 1 || data != 20 {
		t.Errorf("token calls %d, data calls %d; want 1 and 20", tokens, data)
	}
}

func TestRestartReusesTheStoredToken(t *testing.T) {
	e := setup(t)
	if _, _, err := fetchBody(t, e.connector(t), e.request()); err != nil {
		t.Fatal(err)
	}
	e.advance(3 * time.Hour)
	if _, _, err := fetchBody(t, e.connector(t), e.request()); err != nil { // a new process
		t.Fatal(err)
	}
	if tokens, _ := e.fake.counts(); tokens != 1 {
		t.Errorf("token calls %d after a restart, want 1", tokens)
	}
	// The store: one file per app key, named by a hash, 0600, no app key inside.
	entries, err := os.ReadDir(e.store)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if strings.Contains(en.Name(), connectortest.Secrets["KIS_APP_KEY"]) {
			t.Errorf("file name %s holds the app key", en.Name())
		}
		if strings.HasSuffix(en.Name(), ".json") {
			info, _ := en.Info()
			if info.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v", en.Name(), info.Mode().Perm())
			}
			data, _ := os.ReadFile(filepath.Join(e.store, en.Name()))
			connectortest.AssertNoSecrets(t, en.Name(), string(data), connectortest.Secrets["KIS_APP_KEY"], connectortest.Secrets["KIS_APP_SECRET"])
		}
	}
}

func TestTokenRefreshedOnceAnHourBeforeExpiry(t *testing.T) {
	e := setup(t)
	c := e.connector(t)
	if _, _, err := fetchBody(t, c, e.request()); err != nil {
		t.Fatal(err)
	}
	e.advance(22*time.Hour + 59*time.Minute) // 61 min before expiry: keep it
	if _, _, err := fetchBody(t, c, e.request()); err != nil {
		t.Fatal(err)
	}
	if tokens, _ := e.fake.counts(); tokens != 1 {
		t.Fatalf("refreshed %d min before expiry", 61)
	}
	e.advance(2 * time.Minute) // 59 min before expiry: refresh, once
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := fetchBody(t, c, e.request()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if tokens, _ := e.fake.counts(); tokens != 2 {
		t.Errorf("token calls %d, want exactly one refresh (2)", tokens)
	}
	e.fake.mu.Lock()
	last := e.fake.usedTokens[len(e.fake.usedTokens)-1]
	e.fake.mu.Unlock()
	if last != e.fake.issued[1] {
		t.Error("calls after the refresh did not use the new token")
	}
}

func TestRejectedTokenIsReplacedAndRetriedOnce(t *testing.T) {
	for _, rej := range []struct {
		status int
		code   string
	}{{500, kis.CodeTokenExpired}, {200, kis.CodeTokenInvalid}} {
		t.Run(rej.code, func(t *testing.T) {
			e := setup(t)
			c := e.connector(t)
			if _, _, err := fetchBody(t, c, e.request()); err != nil {
				t.Fatal(err)
			}
			e.fake.mu.Lock()
			e.fake.reject[e.fake.issued[0]] = rejection{rej.status, rej.code}
			e.fake.mu.Unlock()
			e.advance(2 * time.Hour)
			if _, _, err := fetchBody(t, c, e.request()); err != nil {
				t.Fatalf("after a rejection: %v", err)
			}
			tokens, data := e.fake.counts()
			if tokens != 2 || data != 3 {
				t.Errorf("token calls %d, data calls %d; want 2 and 3", tokens, data)
			}
			// Another process with the old token in its store file finds the new one.
			if _, _, err := fetchBody(t, e.connector(t), e.request()); err != nil {
				t.Fatal(err)
			}
			if tokens, _ := e.fake.counts(); tokens != 2 {
				t.Errorf("a restart issued again: %d token calls", tokens)
			}
		})
	}
}

// refusedAs checks a refusal of a newly issued token: Transient (to be
// confirmed as AuthFailed, waiting for the next token) before the
// DefaultConfirm-th in a row, AuthFailed at it.
func refusedAs(t *testing.T, err error, n int, code string) {
	t.Helper()
	var ce *connector.Error
	if !errors.As(err, &ce) || ce.Code != code || !strings.Contains(ce.Message, "newly issued") {
		t.Fatalf("refusal %d: err = %v", n, err)
	}
	if n < connector.DefaultConfirm {
		if ce.Class != connector.Transient || ce.Unconfirmed != connector.AuthFailed || ce.RetryAfter != kis.MinIssueInterval {
			t.Fatalf("refusal %d: %v, want transient until confirmed as auth_failed, retried after a minute", n, err)
		}
		return
	}
	if ce.Class != connector.AuthFailed || ce.Unconfirmed != 0 {
		t.Fatalf("refusal %d: %v, want auth_failed", n, err)
	}
}

// A refused token used to make the key AuthFailed on the spot (the second
// refusal within one call); newly issued tokens refused DefaultConfirm
// times in a row are, one a minute.
func TestSecondRejectionIsAuthFailedOnceConfirmed(t *testing.T) {
	e := setup(t)
	c := e.connector(t)
	if _, _, err := fetchBody(t, c, e.request()); err != nil {
		t.Fatal(err)
	}
	// From now on the gateway refuses every token.
	e.fake.mu.Lock()
	e.fake.dataAnswer = func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		fmt.Fprint(w, `{"rt_cd":"1","msg_cd":"EGW00123","msg1":"기간이 만료된 token 입니다."}`)
	}
	e.fake.mu.Unlock()
	e.advance(2 * time.Hour)
	_, _, err := fetchBody(t, c, e.request())
	refusedAs(t, err, 1, kis.CodeTokenExpired)
	if tokens, data := e.fake.counts(); tokens != 2 || data != 3 {
		t.Errorf("token calls %d, data calls %d; want 2 and 3 (one replacement, one retry)", tokens, data)
	}
	for n := 2; n <= connector.DefaultConfirm; n++ {
		e.advance(time.Minute)
		_, _, err := fetchBody(t, c, e.request())
		refusedAs(t, err, n, kis.CodeTokenExpired)
		if tokens, data := e.fake.counts(); tokens != n+1 || data != n+2 {
			t.Errorf("refusal %d: token calls %d, data calls %d; want %d and %d", n, tokens, data, n+1, n+2)
		}
	}
}

func TestFreshTokenRejectedIsAuthFailedOnceConfirmed(t *testing.T) {
	e := setup(t)
	e.fake.dataAnswer = func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		fmt.Fprint(w, `{"rt_cd":"1","msg_cd":"EGW00121","msg1":"유효하지 않은 token 입니다."}`)
	}
	c := e.connector(t)
	for round := range connector.DefaultConfirm {
		_, _, err := fetchBody(t, c, e.request())
		refusedAs(t, err, round+1, kis.CodeTokenInvalid)
		if tokens, data := e.fake.counts(); tokens != round+1 || data != round+1 {
			t.Errorf("round %d: token calls %d, data calls %d", round, tokens, data)
		}
		e.advance(2 * time.Minute)
	}
}

// An answer from the data endpoint between refusals starts the count over.
func TestRefusalsCountOnlyInARow(t *testing.T) {
	e := setup(t)
	refuse := true
	e.fake.dataAnswer = func(w http.ResponseWriter, r *http.Request) {
		if refuse {
			w.WriteHeader(500)
			fmt.Fprint(w, `{"rt_cd":"1","msg_cd":"EGW00121","msg1":"유효하지 않은 token 입니다."}`)
			return
		}
		fmt.Fprint(w, sampleAnswer)
	}
	c := e.connector(t)
	for n := 1; n < connector.DefaultConfirm; n++ {
		_, _, err := fetchBody(t, c, e.request())
		refusedAs(t, err, n, kis.CodeTokenInvalid)
		e.advance(2 * time.Minute)
	}
	e.fake.mu.Lock()
	refuse = false
	e.fake.mu.Unlock()
	if _, _, err := fetchBody(t, c, e.request()); err != nil {
		t.Fatal(err)
	}
	e.fake.mu.Lock()
	refuse = true
	e.fake.mu.Unlock()
	e.advance(25 * time.Hour) // the token expires: a new one is issued and refused
	_, _, err := fetchBody(t, c, e.request())
	refusedAs(t, err, 1, kis.CodeTokenInvalid)
}

// A token the endpoint hands back already expired used to be cached and
// sent; it is never sent, and is AuthFailed once confirmed, one token
// request a minute.
func TestExpiredTokenAnswerIsNeverUsed(t *testing.T) {
	for name, body := range map[string]string{
		"expired in the past": `{"access_token":"tok-dead","access_token_token_expired":"2025-02-02 09:00:00","token_type":"Bearer","expires_in":86400}`,
		"expires_in 0":        `{"access_token":"tok-dead","token_type":"Bearer","expires_in":0}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := setup(t)
			e.fake.tokenAnswer = func() (int, string) { return 200, body }
			c := e.connector(t)
			for n := 1; n <= connector.DefaultConfirm; n++ {
				_, _, err := fetchBody(t, c, e.request())
				var ce *connector.Error
				if !errors.As(err, &ce) || strings.Contains(err.Error(), "tok-dead") {
					t.Fatalf("answer %d: err = %v", n, err)
				}
				want, unconfirmed := connector.Transient, connector.AuthFailed
				if n == connector.DefaultConfirm {
					want, unconfirmed = connector.AuthFailed, 0
				}
				if ce.Class != want || ce.Unconfirmed != unconfirmed || ce.RetryAfter < kis.MinIssueInterval {
					t.Fatalf("answer %d: %v (unconfirmed %v), want %v", n, err, ce.Unconfirmed, want)
				}
				if tokens, data := e.fake.counts(); tokens != n || data != 0 {
					t.Fatalf("answer %d: token calls %d, data calls %d; the expired token was sent", n, tokens, data)
				}
				e.advance(time.Minute)
			}
		})
	}
}

func TestRejectionWithinAMinuteOfIssueIsRateLimited(t *testing.T) {
	e := setup(t)
	if _, _, err := fetchBody(t, e.connector(t), e.request()); err != nil { // process A issues
		t.Fatal(err)
	}
	e.fake.mu.Lock()
	e.fake.reject[e.fake.issued[0]] = rejection{500, kis.CodeTokenInvalid}
	e.fake.mu.Unlock()
	e.advance(30 * time.Second)
	_, _, err := fetchBody(t, e.connector(t), e.request()) // process B loads it, gets it refused
	var ce *connector.Error
	if !errors.As(err, &ce) || ce.Class != connector.RateLimited || ce.Code != kis.CodeTokenThrottle ||
		ce.RetryAfter != 30*time.Second || !strings.Contains(ce.Message, kis.CodeTokenInvalid) {
		t.Fatalf("err = %v", err)
	}
	if tokens, _ := e.fake.counts(); tokens != 1 {
		t.Errorf("token endpoint hammered: %d calls", tokens)
	}
	e.advance(30 * time.Second)
	if _, _, err := fetchBody(t, e.connector(t), e.request()); err != nil {
		t.Fatalf("after the minute: %v", err)
	}
	if tokens, _ := e.fake.counts(); tokens != 2 {
		t.Errorf("token calls %d after the minute, want 2", tokens)
	}
}

func TestThrottlingInTheBodyIsRateLimited(t *testing.T) {
	for _, status := range []int{500, 200} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			e := setup(t)
			e.fake.dataAnswer = func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(status)
				fmt.Fprint(w, `{"rt_cd":"1","msg_cd":"EGW00201","msg1":"초당 거래건수를 초과하였습니다."}`)
			}
			var observed []error
			var mu sync.Mutex
			c := e.connector(t, func(o *connector.Options) {
				o.Limiter = permit.Funcs{ObserveFunc: func(_ context.Context, ob permit.Observation) {
					mu.Lock()
					defer mu.Unlock()
					if ob.Call.Kind == permit.CallData {
						observed = append(observed, ob.Err)
					}
				}}
			})
			_, _, err := fetchBody(t, c, e.request())
			var ce *connector.Error
			if !errors.As(err, &ce) || ce.Class != connector.RateLimited || ce.Code != "EGW00201" || ce.RetryAfter != time.Second ||
				ce.Status != status || ce.Dataset != connectortest.KISDataset {
				t.Fatalf("err = %#v", err)
			}
			if len(observed) != 1 || observed[0] == nil {
				t.Errorf("Observe saw %v", observed)
			}
		})
	}
}

func TestOtherAnswers(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		class  connector.Class
		code   string
	}{
		{"rt_cd 1", 200, `{"rt_cd":"1","msg_cd":"OPSQ0002","msg1":"없는 서비스 코드 입니다"}`, connector.BadRequest, "OPSQ0002"},
		{"empty outputs", 200, `{"rt_cd":"0","msg_cd":"MCA00000","msg1":"정상처리 되었습니다.","output1":{},"output2":[]}`, connector.NoData, "MCA00000"},
		{"html 200", 200, `<html><body>maintenance</body></html>`, connector.Transient, ""},
		{"gateway 502", 502, `bad gateway`, connector.Transient, "502"},
		{"404", 404, `not found`, connector.Transient, "404"}, // plain text is no answer of the API (connector.Head.Foreign)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			e.fake.dataAnswer = func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}
			_, _, err := fetchBody(t, e.connector(t), e.request())
			var ce *connector.Error
			if !errors.As(err, &ce) || ce.Class != tc.class || ce.Code != tc.code {
				t.Fatalf("err = %#v", err)
			}
		})
	}
}

func TestPagingWithTrCont(t *testing.T) {
	e := setup(t)
	e.fake.dataAnswer = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("tr_cont", "M")
		fmt.Fprint(w, sampleAnswer)
	}
	c := e.connector(t)
	resp, _, err := fetchBody(t, c, e.request())
	if err != nil || !resp.More || resp.Header.Get("tr_cont") != "M" {
		t.Fatalf("first page: %v %+v", err, resp)
	}
	req := e.request()
	req.Page = 2
	if _, _, err := fetchBody(t, c, req); err != nil {
		t.Fatal(err)
	}
	if got := e.fake.lastHeader.Get("tr_cont"); got != "N" {
		t.Errorf("page 2 sent tr_cont %q, want N", got)
	}
}

func TestTokenEndpointAnswers(t *testing.T) {
	t.Run("EGW00133", func(t *testing.T) {
		e := setup(t)
		e.fake.tokenAnswer = func() (int, string) {
			return 403, `{"error_code":"EGW00133","error_description":"접근토큰 발급 잠시 후 다시 시도하세요(1분당 1회)"}`
		}
		var kinds []string
		c := e.connector(t, func(o *connector.Options) {
			o.Limiter = permit.Funcs{WaitFunc: func(_ context.Context, call permit.Call) (permit.Permit, error) {
				kinds = append(kinds, call.Kind)
				return permit.Permit{}, nil
			}}
		})
		_, _, err := fetchBody(t, c, e.request())
		var ce *connector.Error
		if !errors.As(err, &ce) || ce.Class != connector.RateLimited || ce.Code != "EGW00133" || ce.RetryAfter != time.Minute {
			t.Fatalf("err = %#v", err)
		}
		if strings.Join(kinds, ",") != "token" {
			t.Errorf("gated calls %v, want one token call", kinds)
		}
		// Within the minute nothing is sent to tokenP again.
		e.advance(30 * time.Second)
		if _, _, err := fetchBody(t, c, e.request()); err == nil {
			t.Fatal("want an error")
		}
		if tokens, _ := e.fake.counts(); tokens != 1 {
			t.Errorf("token calls %d within a minute, want 1", tokens)
		}
	})
	t.Run("refused", func(t *testing.T) {
		e := setup(t)
		e.fake.tokenAnswer = func() (int, string) {
			return 403, `{"error_code":"EGW00103","error_description":"유효하지 않은 AppKey입니다."}`
		}
		_, _, err := fetchBody(t, e.connector(t), e.request())
		if c, _ := connector.ClassOf(err); c != connector.AuthFailed {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no token in answer", func(t *testing.T) {
		e := setup(t)
		e.fake.tokenAnswer = func() (int, string) { return 200, `{"token_type":"Bearer"}` }
		_, _, err := fetchBody(t, e.connector(t), e.request())
		if c, _ := connector.ClassOf(err); c != connector.Transient {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("refresh failure keeps the valid token", func(t *testing.T) {
		e := setup(t)
		c := e.connector(t)
		if _, _, err := fetchBody(t, c, e.request()); err != nil {
			t.Fatal(err)
		}
		e.fake.mu.Lock()
		e.fake.tokenAnswer = func() (int, string) { return 500, `oops` }
		e.fake.mu.Unlock()
		e.advance(23*time.Hour + 30*time.Minute) // in the refresh window, still valid
		if _, _, err := fetchBody(t, c, e.request()); err != nil {
			t.Fatalf("a failed refresh broke a valid token: %v", err)
		}
		if tokens, _ := e.fake.counts(); tokens != 2 {
			t.Errorf("token calls %d, want 2", tokens)
		}
	})
}

func TestProbeAsksForRecentDays(t *testing.T) {
	e := setup(t)
	c := e.connector(t)
	ans, err := c.Probe(context.Background(), e.ds)
	if err != nil {
		t.Fatal(err)
	}
	if !ans.Newest || ans.Status != 200 || len(ans.Body) == 0 {
		t.Errorf("probe answer: newest %v, status %d, %d bytes", ans.Newest, ans.Status, len(ans.Body))
	}
	q := e.fake.lastQuery
	if q.Get("FID_INPUT_DATE_1") != "20250120" || q.Get("FID_INPUT_DATE_2") != "20250203" {
		t.Errorf("probe window %s…%s, want 20250120…20250203 (KST today)", q.Get("FID_INPUT_DATE_1"), q.Get("FID_INPUT_DATE_2"))
	}
}

func TestMissingCredentialsAreAuthFailed(t *testing.T) {
	e := setup(t)
	c := e.connector(t, func(o *connector.Options) { o.Credentials = connector.MapCredentials(nil) })
	_, _, err := fetchBody(t, c, e.request())
	if cl, _ := connector.ClassOf(err); cl != connector.AuthFailed || !strings.Contains(err.Error(), "KIS_APP_KEY") {
		t.Fatalf("err = %v", err)
	}
	if tokens, data := e.fake.counts(); tokens+data != 0 {
		t.Error("a request went out without credentials")
	}
}

func TestNothingLeaks(t *testing.T) {
	e := setup(t)
	c := e.connector(t)
	var errs []string
	for _, answer := range []string{
		`{"rt_cd":"1","msg_cd":"EGW00201","msg1":"초당 거래건수를 초과하였습니다."}`,
		`{"rt_cd":"1","msg_cd":"OPSQ0002","msg1":"` + connectortest.Secrets["KIS_APP_SECRET"] + `"}`,
		sampleAnswer,
	} {
		e.fake.mu.Lock()
		e.fake.dataAnswer = func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, answer) }
		e.fake.mu.Unlock()
		resp, _, err := fetchBody(t, c, e.request())
		if err != nil {
			errs = append(errs, err.Error())
		} else {
			errs = append(errs, resp.URL)
		}
	}
	connectortest.AssertNoSecrets(t, "errors and URLs", strings.Join(errs, "\n"), secrets(e)...)
	connectortest.AssertNoSecrets(t, "log", e.log.String(), secrets(e)...)
	if !strings.Contains(e.log.String(), "issued kis token") {
		t.Errorf("token issuance not logged: %s", e.log.String())
	}
}

func TestTokenKey(t *testing.T) {
	const real, mock = "https://openapi.koreainvestment.com:9443", "https://openapivts.koreainvestment.com:29443"
	a := kis.TokenKey(real, "APPKEY12345", "SECRET")
	if a != kis.TokenKey(real, "APPKEY12345", "SECRET") || strings.Contains(a, "APPKEY") || strings.Contains(a, "SECRET") {
		t.Errorf("TokenKey: %s", a)
	}
	if a == kis.TokenKey(mock, "APPKEY12345", "SECRET") {
		t.Error("the real and mock hosts share a key")
	}
	// Keyed with the secret: the app key alone (a guess, a leaked list)
	// does not reproduce the key, the unkeyed hash it used to be.
	if a == kis.TokenKey(real, "APPKEY12345", "") || a == kis.TokenKey(real, "APPKEY12345", "OTHER") {
		t.Error("the key does not depend on the app secret")
	}
	unkeyed := sha256.Sum256([]byte("kis\x00" + real + "\x00" + "APPKEY12345"))
	if a == "kis-"+hex.EncodeToString(unkeyed[:16]) {
		t.Error("the key is an unkeyed hash of the app key")
	}
}

// TestTokenIssuedIsReported: Options.TokenIssued hears of every token the
// connector was issued (provider, times, why) and of no token it reused,
// from memory or from the store.
func TestTokenIssuedIsReported(t *testing.T) {
	e := setup(t)
	var mu sync.Mutex
	var got []connector.TokenIssue
	hook := func(o *connector.Options) {
		o.TokenIssued = func(_ context.Context, ti connector.TokenIssue) {
			mu.Lock()
			got = append(got, ti)
			mu.Unlock()
		}
	}
	c := e.connector(t, hook)
	for range 2 {
		if _, _, err := fetchBody(t, c, e.request()); err != nil {
			t.Fatal(err)
		}
	}
	// Another process over the same store reuses the stored token.
	if _, _, err := fetchBody(t, e.connector(t, hook), e.request()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(got) != 1 || got[0].Provider != "kis" || !got[0].IssuedAt.Equal(t0) || !got[0].ExpiresAt.After(t0) || got[0].Reason != "none" {
		t.Fatalf("after one issue and two reuses: %+v", got)
	}
	first := got[0].ExpiresAt
	mu.Unlock()
	e.advance(first.Sub(t0) - 59*time.Minute) // within the refresh window
	if _, _, err := fetchBody(t, c, e.request()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if tokens, _ := e.fake.counts(); tokens != 2 || len(got) != 2 {
		t.Fatalf("%d tokens issued, %d reported: %+v", tokens, len(got), got)
	}
	if got[1].Reason != "expiring" || !got[1].IssuedAt.Equal(e.clk.Now()) || !got[1].ExpiresAt.After(first) {
		t.Errorf("the refresh reported as %+v", got[1])
	}
}

// TestWarmTokenFetchesTheTokenBeforeTheFirstCall: WarmToken gets the
// token a batch's first call would otherwise wait for — once, however
// often it is asked — and the calls that follow use it without asking
// tokenP; a second process sharing the store finds it there.
func TestWarmTokenFetchesTheTokenBeforeTheFirstCall(t *testing.T) {
	e := setup(t)
	c := e.connector(t)
	var w connector.TokenWarmer = c
	for range 3 {
		if err := w.WarmToken(context.Background()); err != nil {
			t.Fatalf("WarmToken: %v", err)
		}
	}
	if tokens, data := e.fake.counts(); tokens != 1 || data != 0 {
		t.Fatalf("after warming: %d token calls, %d data calls; want 1 and 0", tokens, data)
	}
	if _, _, err := fetchBody(t, c, e.request()); err != nil {
		t.Fatal(err)
	}
	if err := e.connector(t).WarmToken(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tokens, data := e.fake.counts(); tokens != 1 || data != 1 {
		t.Errorf("after a call and another process's warming: %d token calls, %d data calls; want 1 and 1", tokens, data)
	}
}
