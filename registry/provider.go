package registry

import "time"

// Auth strategies a provider may declare.
const (
	AuthKISOAuth2   = "kis_oauth2"    // OAuth2 client credentials (app key + secret), token cached and shared
	AuthAPIKeyQuery = "api_key_query" // key in a query parameter (FRED: api_key)
	AuthAPIKeyPath  = "api_key_path"  // key as a path segment (ECOS)
	AuthUpbitJWT    = "upbit_jwt"     // HS512 JWT per request (UPBIT exchange endpoints)
	AuthServiceKey  = "service_key"   // data.go.kr serviceKey, the decoding key encoded once
	AuthNone        = "none"
)

// authRoles are the credential roles each strategy needs, in order.
var authRoles = map[string][]string{
	AuthKISOAuth2:   {"app_key", "app_secret"},
	AuthAPIKeyQuery: {"api_key"},
	AuthAPIKeyPath:  {"api_key"},
	AuthUpbitJWT:    {"access_key", "secret_key"},
	AuthServiceKey:  {"service_key"},
	AuthNone:        nil,
}

// defaultAuthParam is the query parameter a strategy puts the key in when the
// registry does not name one.
var defaultAuthParam = map[string]string{
	AuthAPIKeyQuery: "api_key",
	AuthServiceKey:  "serviceKey",
}

// Auth is how a provider authenticates requests. The registry holds the
// names of the environment variables that carry credentials, never their
// values: a connector reads the variable NAME, or the file named by
// NAME_FILE.
type Auth struct {
	Strategy string
	// Credentials maps a role (app_key, api_key, …) to an environment
	// variable name. Every role of the strategy is present after loading;
	// undeclared ones default to PROVIDER_ROLE in upper case.
	Credentials map[string]string
	// Param is the query parameter carrying the key for api_key_query and
	// service_key (defaults: api_key, serviceKey).
	Param string
}

// Roles returns the credential roles of the strategy, in a stable order.
func (a Auth) Roles() []string { return authRoles[a.Strategy] }

// Provider is one API provider: where it lives, how it authenticates, what
// limits it imposes and on what terms its data may be used.
type Provider struct {
	ID        string
	Name      string // display name, may be Korean; defaults to ID
	BaseURL   string // scheme://host[:port][/prefix]; empty when not declared
	Timezone  string // IANA name; daily quotas reset and schedules fire in it
	Location  *time.Location
	Connector string // which connector speaks its wire format; defaults to ID
	Auth      Auth

	// RateLimits are the declared limits, one entry per scope. A provider
	// declared with `rate_limits: unknown` gets one entry for scope key
	// whose windows are all unknown.
	RateLimits  []*RateLimit
	Terms       Terms
	TermsSource *Source
	// Bounds cap its answers and objects: the provider's bounds block
	// over DefaultBounds, every field set.
	Bounds Bounds
	// Freshness are its publication facts, one rule a cycle unit
	// (providers[].freshness): when a probed dataset's newest period is
	// late. Every cycle unit its probed datasets use must have one.
	Freshness []Freshness
	// Notice is the fixed notice its terms of use ask an application to
	// show on every page carrying its data (FRED's not-endorsed
	// sentence); nil when it asks none.
	Notice *Notice
	// Maintenance are its declared maintenance windows
	// (providers[].maintenance): every dataset of it is silenced in them.
	Maintenance []Maintenance

	// TimezoneDefaulted is true when no timezone was declared and UTC was
	// assumed; validate reports it as needing checking.
	TimezoneDefaulted bool
	Pos               Pos

	boundsDecl boundsDecl
}

// ServiceScoped reports whether any limit of the provider applies per
// service (data.go.kr 활용신청), so that datasets must name a scope_key.
func (p *Provider) ServiceScoped() bool {
	for _, rl := range p.RateLimits {
		if rl.Scope == ScopeService {
			return true
		}
	}
	return false
}
