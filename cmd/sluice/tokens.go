package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/sluicehq/sluice/codec"
	"github.com/sluicehq/sluice/tokenkeeper"
)

// Where KIS tokens are kept (--token-store).
const (
	tokensAuto   = "auto"
	tokensKeeper = "keeper"
	tokensFile   = "file"
)

// devKeyFile is the payload key `sluice dev` creates under its data
// directory when none is configured.
const devKeyFile = "codec.key"

// keyFlags name the payload key ring: --codec-key-file (SLUICE_CODEC_KEY_FILE)
// or the keys themselves in SLUICE_CODEC_KEY.
type keyFlags struct {
	file string
}

func (k *keyFlags) bind(fs *pflag.FlagSet) {
	stringFlag(fs, &k.file, "codec-key-file", codec.EnvKeyFile, "",
		"file of the payload keys (0600) that seal the token keepers' payloads, or the keys in "+codec.EnvKey+"; `sluice codec keygen` makes one")
	annotateSecret(fs, "codec-key-file", codec.EnvKey)
}

// load reads the key ring; codec.ErrNoKey when none is configured.
func (k *keyFlags) load() (*codec.Keyring, error) { return codec.LoadKeyring(k.file) }

// tokenStoreFlag binds --token-store.
func tokenStoreFlag(fs *pflag.FlagSet, p *string) {
	stringFlag(fs, p, "token-store", "SLUICE_TOKEN_STORE", tokensAuto,
		"where KIS tokens are kept: keeper (token-keeper workflows in Temporal, one token for every machine; needs a payload key), "+
			"file (<data-dir>/tokens, this machine only), auto (keeper when a payload key is set, else file)")
}

// keyring decides where the worker keeps KIS tokens: it returns the
// payload key ring for the token keepers, or nil for the file store.
// For `sluice dev` (dev set) without a configured key, one is created in
// the data directory (0600).
func (r *runtimeFlags) keyring(log *slog.Logger, dev bool) (*codec.Keyring, error) {
	switch r.tokenStore {
	case tokensAuto, tokensKeeper:
	case tokensFile:
		return nil, nil
	default:
		return nil, fmt.Errorf("--token-store %q: want %s, %s or %s", r.tokenStore, tokensKeeper, tokensFile, tokensAuto)
	}
	ring, err := r.keys.load()
	if errors.Is(err, codec.ErrNoKey) && dev {
		var created bool
		path := r.lake.dataDir.codecKey()
		if ring, created, err = codec.EnsureKeyFile(path); err == nil && created {
			log.Info("created a payload key for the token keepers", "file", path, "key_id", ring.PrimaryID())
		}
	}
	if errors.Is(err, codec.ErrNoKey) {
		if r.tokenStore == tokensKeeper {
			return nil, fmt.Errorf("--token-store %s: %w; the keepers' payloads hold the token and are never written in clear", tokensKeeper, err)
		}
		log.Warn("KIS tokens are kept on this machine only: workers on other machines issue their own and trip KIS's once-a-minute limit; "+
			"set "+codec.EnvKey+" or "+codec.EnvKeyFile+" to share one token through Temporal", "dir", r.lake.dataDir.tokens())
		return nil, nil
	}
	return ring, err
}

// tokenKeeper makes the token keepers' sealing client over tc (dialled
// with opts) when ring is set, and remembers it for workerOptions; it
// returns nil for the file store.
func (r *runtimeFlags) tokenKeeper(ctx context.Context, tc client.Client, opts client.Options, ring *codec.Keyring) (client.Client, error) {
	if ring == nil {
		return nil, nil
	}
	c, err := codec.New(ring)
	if err != nil {
		return nil, err
	}
	kc, err := tokenkeeper.SealingClient(ctx, tc, opts, c)
	if err != nil {
		return nil, err
	}
	r.keeper = kc
	return kc, nil
}

// codecServer is a running codec endpoint.
type codecServer struct {
	url     string
	srv     *http.Server
	origins atomic.Pointer[[]string]
}

// isLoopback reports whether a listen address binds loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// startCodecServer serves the codec endpoint for ring on addr. Off
// loopback it needs a bearer token: anyone who can reach it could decode
// (and seal) payloads. origins are the browser origins (the Web UI's)
// allowed to call it; Allow adds more later.
func startCodecServer(addr string, ring *codec.Keyring, token string, origins []string) (*codecServer, error) {
	if !isLoopback(addr) && token == "" {
		return nil, fmt.Errorf("refusing to serve the codec endpoint on %s without a bearer token: bind loopback (127.0.0.1) or set %s or --auth-token-file", addr, envCodecToken)
	}
	c, err := codec.New(ring)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for the codec endpoint on %s: %w", addr, err)
	}
	cs := &codecServer{url: "http://" + ln.Addr().String()}
	cs.Allow(origins...)
	h := codec.Handler(c, codec.HandlerOptions{Token: token, AllowOrigin: func(o string) bool {
		return codec.AllowOrigins(*cs.origins.Load()...)(o)
	}})
	mux := http.NewServeMux()
	mux.Handle("/", h)
	cs.srv = codec.NewServer(mux)
	go func() { _ = cs.srv.Serve(ln) }()
	return cs, nil
}

// Allow adds browser origins that may call the endpoint; a UI URL on
// 127.0.0.1 is allowed as localhost too.
func (cs *codecServer) Allow(origins ...string) {
	var all []string
	if cur := cs.origins.Load(); cur != nil {
		all = append(all, *cur...)
	}
	for _, o := range origins {
		if o == "" {
			continue
		}
		all = append(all, o)
		if rest, ok := strings.CutPrefix(o, "http://127.0.0.1:"); ok {
			all = append(all, "http://localhost:"+rest)
		}
	}
	cs.origins.Store(&all)
}

// Close stops the endpoint.
func (cs *codecServer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = cs.srv.Shutdown(ctx)
}
