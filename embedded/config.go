package embedded

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
)

// storeName names the one SQLite data store, used for both the default and
// the visibility store.
const storeName = "sqlite"

// servicePorts are the gRPC ports of the four server services.
type servicePorts struct {
	frontend, frontendHTTP, history, matching, worker int
}

// defaultDynamicConfig is what this package sets on top of the server's own
// defaults; Options.DynamicConfig overrides any of it.
func defaultDynamicConfig() map[string]any {
	return map[string]any{
		// Sluice gives each provider one task queue and relies on it having
		// a single partition, so the queue's rate limit is held in one place.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key().String():  1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key().String(): 1,
		// As the CLI dev server does: new search attributes are visible at
		// once, with persistence rate limits raised to match.
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key().String(): true,
		dynamicconfig.FrontendPersistenceMaxQPS.Key().String():               10000,
		dynamicconfig.HistoryPersistenceMaxQPS.Key().String():                45000,
		// The UI lists workflows through visibility; 10 requests/s per
		// namespace (the default) throttles it.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key().String(): 100,
		// A dev server needs no 128k-entry mutable state cache.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key().String(): 8192,
		// Worker Deployments (docs/deploy.md): Sluice's workers poll as a
		// deployment version, its singletons are pinned, and a pinned run
		// hears that the current version changed (the flag it continues
		// as new on). The server's defaults say the same; set here so that
		// a change of default cannot silently pin singletons for good.
		dynamicconfig.EnableDeploymentVersions.Key().String():                   true,
		dynamicconfig.FrontendEnableWorkerVersioningWorkflowAPIs.Key().String(): true,
		dynamicconfig.EnableSendTargetVersionChanged.Key().String():             true,
	}
}

// dynamicConfigClient merges the defaults with the caller's values. Keys
// are case-insensitive, as the server reads them.
func dynamicConfigClient(extra map[string]any) dynamicconfig.StaticClient {
	client := make(dynamicconfig.StaticClient)
	for k, v := range defaultDynamicConfig() {
		client[dynamicconfig.MakeKey(k)] = v
	}
	for k, v := range extra {
		client[dynamicconfig.MakeKey(k)] = v
	}
	return client
}

// serverConfig builds the static server config: all services on host, one
// history shard, SQLite at dbPath for both stores, archival off. The
// frontend also serves Temporal's HTTP API (which Nexus needs) on a free
// port.
func serverConfig(host string, ports servicePorts, dbPath string, tlsOpts *TLS) *config.Config {
	frontendAddr := net.JoinHostPort(host, strconv.Itoa(ports.frontend))
	var c config.Config
	c.Global.Membership.MaxJoinDuration = 30 * time.Second
	c.Global.Membership.BroadcastAddress = host

	c.Persistence.DefaultStore = storeName
	c.Persistence.VisibilityStore = storeName
	c.Persistence.NumHistoryShards = 1
	c.Persistence.DataStores = map[string]config.DataStore{
		storeName: {SQL: sqlConfig(dbPath, true)},
	}

	c.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             frontendAddr,
				HTTPAddress:            net.JoinHostPort(host, strconv.Itoa(ports.frontendHTTP)),
			},
		},
	}
	c.DCRedirectionPolicy.Policy = "noop"

	service := func(port int) config.Service {
		var s config.Service
		s.RPC.GRPCPort = port
		s.RPC.BindOnIP = host
		return s
	}
	frontend := service(ports.frontend)
	frontend.RPC.HTTPPort = ports.frontendHTTP
	c.Services = map[string]config.Service{
		string(primitives.FrontendService): frontend,
		string(primitives.HistoryService):  service(ports.history),
		string(primitives.MatchingService): service(ports.matching),
		string(primitives.WorkerService):   service(ports.worker),
	}

	c.Archival.History.State = "disabled"
	c.Archival.Visibility.State = "disabled"
	c.NamespaceDefaults.Archival.History.State = "disabled"
	c.NamespaceDefaults.Archival.Visibility.State = "disabled"
	c.PublicClient.HostPort = frontendAddr
	if tlsOpts != nil {
		tlsOpts.apply(&c, host)
	}
	return &c
}

// serverOptions returns the options for temporal.NewServer.
func serverOptions(host string, ports servicePorts, dbPath string, logger serverLogger, dynamic map[string]any, tlsOpts *TLS) []temporal.ServerOption {
	hostPort := func(port int) static.Hosts {
		return static.SingleLocalHost(net.JoinHostPort(host, strconv.Itoa(port)))
	}
	return []temporal.ServerOption{
		temporal.WithConfig(serverConfig(host, ports, dbPath, tlsOpts)),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: hostPort(ports.frontend),
			primitives.HistoryService:  hostPort(ports.history),
			primitives.MatchingService: hostPort(ports.matching),
			primitives.WorkerService:   hostPort(ports.worker),
		}),
		temporal.WithLogger(logger),
		temporal.WithDynamicConfigClient(dynamicConfigClient(dynamic)),
	}
}

// pickPorts resolves the frontend port (0 means any free one) and picks free
// ports for the internal services.
func pickPorts(host string, frontend int) (servicePorts, error) {
	var p servicePorts
	var err error
	if p.frontend, err = resolvePort(host, frontend); err != nil {
		return p, fmt.Errorf("frontend: %w", err)
	}
	for _, port := range []*int{&p.frontendHTTP, &p.history, &p.matching, &p.worker} {
		if *port, err = freePort(host); err != nil {
			return p, err
		}
	}
	return p, nil
}
