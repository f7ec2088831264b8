module github.com/sluicehq/sluice/tools

go 1.26.8

require (
	go.temporal.io/sdk/contrib/tools/workflowcheck v0.3.0 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)
