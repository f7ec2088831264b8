package notify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"
)

// SinkType is how a sink is written to.
type SinkType string

// The sink types.
const (
	// WebhookSink: a JSON body (WebhookBody), signed with HMAC-SHA256 when
	// the sink has a key, with an Idempotency-Key header.
	WebhookSink SinkType = "webhook"
	// SlackSink: a Slack-compatible incoming webhook ({text, blocks}),
	// with the Idempotency-Key header too.
	SlackSink SinkType = "slack"
)

// Sink is one destination of notifications. URL and Key are secrets:
// they come from environment variables or files, never from the
// notifications file, and never reach logs, errors or Temporal history
// (the notifier workflow names a sink by Name only).
type Sink struct {
	Name string
	Type SinkType
	URL  string
	Key  []byte
}

// Config is the notifications configuration.
type Config struct {
	// GroupWindow is how long the notifier waits after a provider's
	// latest change for another before it sends them, one message per
	// provider (0: DefaultGroupWindow).
	GroupWindow time.Duration
	// GroupMax bounds how long it holds a provider's changes while more
	// keep coming (0: DefaultGroupMax).
	GroupMax time.Duration
	Sinks    []Sink
}

// DefaultGroupWindow is how long the notifier waits for a provider's next
// change.
const DefaultGroupWindow = 2 * time.Minute

// DefaultGroupMax is the longest a provider's changes are held: an hour,
// the usual probe interval, over which its datasets' first probes are
// spread, so that their downs are confirmed over as long.
const DefaultGroupMax = time.Hour

// Sink returns the sink named name, or nil.
func (c *Config) Sink(name string) *Sink {
	if c == nil {
		return nil
	}
	for i := range c.Sinks {
		if c.Sinks[i].Name == name {
			return &c.Sinks[i]
		}
	}
	return nil
}

// Names returns the sinks' names in the configured order.
func (c *Config) Names() []string {
	if c == nil {
		return nil
	}
	out := make([]string, len(c.Sinks))
	for i, s := range c.Sinks {
		out[i] = s.Name
	}
	return out
}

// Lookup reads a secret by the environment variable name the
// notifications file gives (connector.EnvCredentials: NAME, or the file
// NAME_FILE names).
type Lookup func(name string) (string, error)

// The variables that configure sinks without a notifications file.
const (
	EnvWebhookURL = "SLUICE_NOTIFY_WEBHOOK_URL"
	EnvWebhookKey = "SLUICE_NOTIFY_WEBHOOK_KEY"
	EnvSlackURL   = "SLUICE_NOTIFY_SLACK_URL"
)

type fileConfig struct {
	GroupSeconds    int        `yaml:"group_seconds"`
	GroupMaxSeconds int        `yaml:"group_max_seconds"`
	Sinks           []fileSink `yaml:"sinks"`
}

type fileSink struct {
	Name   string `yaml:"name"`
	Type   string `yaml:"type"`
	URLEnv string `yaml:"url_env"`
	KeyEnv string `yaml:"key_env"`
}

var sinkName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Load reads the notifications file at path (docs/notifications.md); an
// empty path configures the sinks the well-known variables name
// (EnvWebhookURL with EnvWebhookKey, EnvSlackURL), none when they are
// unset. Errors name the file, the field and the value (never a
// secret's).
func Load(path string, lookup Lookup) (*Config, error) {
	if path == "" {
		return fromEnv(lookup)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading notifications file: %w", err)
	}
	return Parse(path, data, lookup)
}

// Parse reads a notifications file's content; name names it in errors.
func Parse(name string, data []byte, lookup Lookup) (*Config, error) {
	var fc fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&fc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: parsing notifications file: %w", name, err)
	}
	cfg := &Config{GroupWindow: DefaultGroupWindow}
	if fc.GroupSeconds < 0 || fc.GroupSeconds > 3600 {
		return nil, fmt.Errorf("%s: group_seconds: %d out of range (0 to 3600)", name, fc.GroupSeconds)
	}
	if fc.GroupSeconds > 0 {
		cfg.GroupWindow = time.Duration(fc.GroupSeconds) * time.Second
	}
	if fc.GroupMaxSeconds < 0 || fc.GroupMaxSeconds > 86400 {
		return nil, fmt.Errorf("%s: group_max_seconds: %d out of range (0 to 86400)", name, fc.GroupMaxSeconds)
	}
	if fc.GroupMaxSeconds > 0 {
		cfg.GroupMax = time.Duration(fc.GroupMaxSeconds) * time.Second
	}
	for i, fs := range fc.Sinks {
		field := fmt.Sprintf("sinks[%d]", i)
		if !sinkName.MatchString(fs.Name) {
			return nil, fmt.Errorf("%s: %s.name: %q is not a sink name (lower-case letters, digits, - and _)", name, field, fs.Name)
		}
		if cfg.Sink(fs.Name) != nil {
			return nil, fmt.Errorf("%s: %s.name: %q is used twice", name, field, fs.Name)
		}
		s := Sink{Name: fs.Name, Type: SinkType(fs.Type)}
		if s.Type != WebhookSink && s.Type != SlackSink {
			return nil, fmt.Errorf("%s: %s.type: %q is not a sink type (webhook or slack)", name, field, fs.Type)
		}
		if fs.URLEnv == "" {
			return nil, fmt.Errorf("%s: %s.url_env: empty: name the environment variable holding the sink's URL", name, field)
		}
		u, err := lookup(fs.URLEnv)
		if err != nil {
			return nil, fmt.Errorf("%s: %s.url_env: %s: %w", name, field, fs.URLEnv, err)
		}
		if err := checkURL(u); err != nil {
			return nil, fmt.Errorf("%s: %s.url_env: the URL in %s %w", name, field, fs.URLEnv, err)
		}
		s.URL = u
		if fs.KeyEnv != "" {
			if s.Type != WebhookSink {
				return nil, fmt.Errorf("%s: %s.key_env: %q: only a webhook sink is signed", name, field, fs.KeyEnv)
			}
			k, err := lookup(fs.KeyEnv)
			if err != nil {
				return nil, fmt.Errorf("%s: %s.key_env: %s: %w", name, field, fs.KeyEnv, err)
			}
			s.Key = []byte(k)
		}
		cfg.Sinks = append(cfg.Sinks, s)
	}
	return cfg, nil
}

// checkURL accepts an http or https URL with a host; the error never
// holds the URL (it may carry a token).
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("is not an http(s) URL with a host")
	}
	return nil
}

func fromEnv(lookup Lookup) (*Config, error) {
	cfg := &Config{GroupWindow: DefaultGroupWindow}
	opt := func(name string) string {
		v, err := lookup(name)
		if err != nil {
			return ""
		}
		return v
	}
	if u := opt(EnvWebhookURL); u != "" {
		if err := checkURL(u); err != nil {
			return nil, fmt.Errorf("configuring notifications: %s %w", EnvWebhookURL, err)
		}
		s := Sink{Name: "webhook", Type: WebhookSink, URL: u}
		if k := opt(EnvWebhookKey); k != "" {
			s.Key = []byte(k)
		}
		cfg.Sinks = append(cfg.Sinks, s)
	}
	if u := opt(EnvSlackURL); u != "" {
		if err := checkURL(u); err != nil {
			return nil, fmt.Errorf("configuring notifications: %s %w", EnvSlackURL, err)
		}
		cfg.Sinks = append(cfg.Sinks, Sink{Name: "slack", Type: SlackSink, URL: u})
	}
	return cfg, nil
}
