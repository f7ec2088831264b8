package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// The command reference in docs/cli is generated from the command tree:
// `make docs` (go run ./cmd/sluice gen-docs docs/cli). TestDocsCLIIsCurrent
// fails when it is stale.
func init() {
	register(func() *cobra.Command {
		return &cobra.Command{
			Use:    "gen-docs DIR",
			Short:  "Write the command reference, one markdown page per command, into DIR",
			Hidden: true,
			Args:   cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error {
				clearFlagEnv()
				return genDocs(args[0])
			},
		}
	})
}

// flagEnvNames is every environment variable a flag of the command tree
// reads: its defaults would otherwise leak into the generated pages.
func flagEnvNames() []string {
	var names []string
	var visit func(c *cobra.Command)
	collect := func(fs *pflag.FlagSet) {
		fs.VisitAll(func(f *pflag.Flag) {
			names = append(names, f.Annotations[envAnnotation]...)
			names = append(names, f.Annotations[secretEnvAnnotation]...)
		})
	}
	visit = func(c *cobra.Command) {
		collect(c.Flags())
		collect(c.PersistentFlags())
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(newRootCmd())
	return names
}

// clearFlagEnv unsets every variable a flag reads, so that each flag's
// help shows its built-in default, the same on every machine.
func clearFlagEnv() {
	for _, n := range flagEnvNames() {
		_ = os.Unsetenv(n)
	}
	for k := range envProblems {
		delete(envProblems, k)
	}
}

// genDocs writes one markdown page per command into dir, without a date
// line. The caller clears the flags' environment first (clearFlagEnv).
func genDocs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	root := newRootCmd()
	root.DisableAutoGenTag = true
	prepend := func(string) string {
		return "<!-- Generated from the command tree by `make docs`; do not edit. -->\n\n"
	}
	link := func(name string) string { return name }
	if err := doc.GenMarkdownTreeCustom(root, dir, prepend, link); err != nil {
		return fmt.Errorf("generating the command reference into %s: %w", dir, err)
	}
	return nil
}
