package codec

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/httpserver"
	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// ServerLimits bound the codec endpoint's connections: a request of up to
// 4 MB is read in 30 s and answered in 30 s more; headers (a bearer token,
// the UI's X-Namespace) fit in 64 KiB.
var ServerLimits = httpserver.Default

// NewServer returns the HTTP server for the codec endpoint h, with every
// timeout and the header size bounded (ServerLimits).
func NewServer(h http.Handler) *http.Server { return httpserver.New(h, ServerLimits) }

// maxRequest bounds a codec request: Temporal's gRPC messages stop at 4 MB.
const maxRequest = 4 << 20

// SecretFields are the JSON object keys whose string values the codec
// endpoint's /decode replaces with Redacted: the token keeper keeps KIS
// access tokens under access_token, and no decoded view may show one.
var SecretFields = []string{"access_token", "appsecret", "app_secret"}

// Redacted replaces a secret in a decoded payload.
const Redacted = "REDACTED"

// HandlerOptions configure the codec endpoint.
type HandlerOptions struct {
	// AllowOrigin reports whether a browser origin (the Temporal Web UI's,
	// such as http://127.0.0.1:8233) may call the endpoint; requests from
	// other origins are refused. nil allows none: only clients that send
	// no Origin (the temporal CLI) can use it.
	AllowOrigin func(origin string) bool
	// Token, when not empty, is required as `Authorization: Bearer
	// <token>` on every /encode and /decode request.
	Token string
}

// AllowOrigins returns an AllowOrigin accepting exactly the origins
// given (scheme://host[:port], compared case-insensitively, trailing
// slash ignored).
func AllowOrigins(origins ...string) func(string) bool {
	var norm []string
	for _, o := range origins {
		if o = normOrigin(o); o != "" {
			norm = append(norm, o)
		}
	}
	return func(origin string) bool { return slices.Contains(norm, normOrigin(origin)) }
}

func normOrigin(o string) string {
	return strings.ToLower(strings.TrimRight(strings.TrimSpace(o), "/"))
}

// Handler serves Temporal's remote codec protocol for c: POST …/encode
// and POST …/decode with a JSON Payloads body (any path prefix, such as
// /{namespace}/decode, as the protocol asks). /decode redacts the
// SecretFields of every JSON payload it opens. CORS preflight requests
// from allowed origins are answered for the Web UI.
func Handler(c *Codec, opts HandlerOptions) http.Handler {
	return &handler{c: c, opts: opts}
}

type handler struct {
	c    *Codec
	opts HandlerOptions
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" {
		if h.opts.AllowOrigin == nil || !h.opts.AllowOrigin(origin) {
			http.Error(w, "origin not allowed", http.StatusForbidden)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Namespace")
		w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		w.Header().Set("Access-Control-Max-Age", "600")
		w.Header().Add("Vary", "Origin")
	}
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	encode := strings.HasSuffix(r.URL.Path, "/encode")
	if !encode && !strings.HasSuffix(r.URL.Path, "/decode") {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	if h.opts.Token != "" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(h.opts.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice codec"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequest))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("request body over %d bytes", maxRequest), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading request body failed", http.StatusBadRequest)
		return
	}
	var in commonpb.Payloads
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &in); err != nil {
		http.Error(w, "the body is not a JSON Payloads message", http.StatusBadRequest)
		return
	}
	var out []*commonpb.Payload
	if encode {
		out, err = h.c.Encode(in.Payloads)
	} else {
		out, err = h.c.Decode(in.Payloads)
		if err == nil {
			out = redactPayloads(out)
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := protojson.Marshal(&commonpb.Payloads{Payloads: out})
	if err != nil {
		http.Error(w, "encoding the answer failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
}

// redactPayloads replaces the SecretFields of JSON payloads. A payload
// whose JSON does not parse is replaced whole: it may hold anything.
func redactPayloads(ps []*commonpb.Payload) []*commonpb.Payload {
	out := make([]*commonpb.Payload, len(ps))
	for i, p := range ps {
		out[i] = p
		if enc := string(p.GetMetadata()[MetadataEncoding]); enc != "json/plain" && enc != "json/protobuf" {
			continue
		}
		data, changed, ok := redactJSON(p.GetData())
		if !ok {
			data, changed = []byte(`"`+Redacted+`"`), true
		}
		if changed {
			q := &commonpb.Payload{Metadata: p.GetMetadata(), Data: data}
			out[i] = q
		}
	}
	return out
}

// redactJSON rewrites a JSON document with every string value of a
// SecretFields key replaced; ok is false when data is not JSON.
func redactJSON(data []byte) (out []byte, changed, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, false // more after the value: not one JSON document
	}
	v, changed = redactValue(v)
	if !changed {
		return data, false, true
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, false, false
	}
	return out, true, true
}

func redactValue(v any) (any, bool) {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if slices.Contains(SecretFields, strings.ToLower(k)) {
				if s, isString := x.(string); !isString || s != "" {
					t[k] = Redacted
					changed = true
				}
				continue
			}
			if y, c := redactValue(x); c {
				t[k] = y
				changed = true
			}
		}
	case []any:
		for i, x := range t {
			if y, c := redactValue(x); c {
				t[i] = y
				changed = true
			}
		}
	}
	return v, changed
}
