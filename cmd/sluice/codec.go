package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/codec"
)

func init() { register(newCodecCmd) }

// envCodecToken holds the codec endpoint's bearer token itself; the flag
// --auth-token-file (SLUICE_CODEC_AUTH_TOKEN_FILE) names a file holding it.
const envCodecToken = "SLUICE_CODEC_AUTH_TOKEN"

// defaultCodecOrigins are the Web UI origins allowed by default: the UI of
// `sluice dev`/`sluice server` and of the compose stack.
var defaultCodecOrigins = []string{"http://127.0.0.1:8233", "http://localhost:8233"}

func newCodecCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "codec",
		Short: "Payload keys and the codec endpoint that shows sealed payloads in the Web UI",
		Long: `The token keepers' payloads (KIS access tokens) are sealed with AES-256-GCM
under a key ring: SLUICE_CODEC_KEY holds it, or SLUICE_CODEC_KEY_FILE (or
--codec-key-file) names a file (mode 0600) holding it — one base64 key per
line, optionally "ID:" before it; the first key seals, every key opens, so a
key is rotated by putting a new one first and dropping the old one after
its histories are gone. Every worker needs the same ring.`,
	}
	cmd.AddCommand(newCodecServeCmd(), newCodecKeygenCmd())
	return cmd
}

func newCodecServeCmd() *cobra.Command {
	var keys keyFlags
	var addr, tokenFile string
	var origins []string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the codec endpoint (/encode, /decode) for the Web UI and the temporal CLI",
		Long: `Serves Temporal's remote codec protocol: POST /decode opens sealed payloads
(access tokens in them stay redacted), POST /encode seals. Point the Web UI
at it (its "Codec Server" setting, or TEMPORAL_CODEC_ENDPOINT) or the CLI
(temporal workflow show --codec-endpoint http://127.0.0.1:8234). It binds
loopback by default; on any other address it requires a bearer token
(SLUICE_CODEC_AUTH_TOKEN or --auth-token-file; the CLI sends it with
--codec-auth "Bearer <token>"). Browsers may call it only from the origins
allowed (--allow-origin).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ring, err := keys.load()
			if err != nil {
				return err
			}
			tok, src, err := material("auth-token-file", tokenFile, envCodecToken)
			if err != nil {
				return err
			}
			token := strings.TrimSpace(string(tok))
			if tok != nil && token == "" {
				return fmt.Errorf("the codec endpoint's bearer token in %s is empty", src)
			}
			cs, err := startCodecServer(addr, ring, token, origins)
			if err != nil {
				return err
			}
			defer cs.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "Codec      %s (key ids %s; origins %s; bearer token %v)\n", cs.url,
				strings.Join(ring.IDs(), ", "), strings.Join(origins, ", "), token != "")
			<-cmd.Context().Done()
			return nil
		},
	}
	fs := cmd.Flags()
	keys.bind(fs)
	stringFlag(fs, &addr, "addr", "SLUICE_CODEC_ADDR", "127.0.0.1:8234", "listen HOST:PORT (off loopback a bearer token is required)")
	stringFlag(fs, &tokenFile, "auth-token-file", envCodecToken+"_FILE", "", "file holding the bearer token every request must carry (or the token in "+envCodecToken+")")
	annotateSecret(fs, "auth-token-file", envCodecToken)
	stringSliceFlag(fs, &origins, "allow-origin", "SLUICE_CODEC_ALLOW_ORIGINS", defaultCodecOrigins, "browser origin (the Web UI's URL) allowed to call the endpoint (repeatable; the variable is comma-separated)")
	return cmd
}

func newCodecKeygenCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "keygen [--out FILE]",
		Short: "Print a new payload key, or write it to a new file (mode 0600)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, err := codec.NewKey()
			if err != nil {
				return err
			}
			if out == "" {
				fmt.Fprintln(cmd.OutOrStdout(), line)
				return nil
			}
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s exists: not overwriting a key ring (put the new key first in it to rotate)", out)
			}
			if err != nil {
				return fmt.Errorf("creating the key file: %w", err)
			}
			_, werr := fmt.Fprintln(f, line)
			if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
				return fmt.Errorf("writing %s: %w", out, err)
			}
			r, err := codec.ReadKeyFile(out)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (key id %s)\n", out, r.PrimaryID())
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the key to this new file (mode 0600) instead of stdout")
	return cmd
}

// stringSliceFlag is a repeatable string flag whose default a
// comma-separated environment variable sets.
func stringSliceFlag(fs *pflag.FlagSet, p *[]string, name, env string, def []string, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		def = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				def = append(def, s)
			}
		}
	}
	fs.StringSliceVar(p, name, def, fmt.Sprintf("%s (env %s)", usage, env))
	annotate(fs, name, env)
}
