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

// servicePorts are the gRPC ports of the four server services and, in a
// cluster, their membership (gossip) ports.
type servicePorts struct {
	frontend, frontendHTTP, history, matching, worker int
	// membership holds the frontend's, history's, matching's and worker's
	// membership ports; zero without a cluster.
	membership [4]int
}

// persistence says where the server keeps its data: SQLite in one file,
// or PostgreSQL, where several nodes form a cluster.
type persistence struct {
	dataStores      map[string]config.DataStore
	defaultStore    string
	visibilityStore string
	shards          int32
	// cluster runs membership through ringpop (nodes find each other
	// through the database) instead of static hosts.
	cluster bool
	// nodeHost is the IP address the internal services bind and
	// advertise to the other nodes.
	nodeHost string
}

// sqlitePersistence keeps everything in the SQLite file at dbPath, on one
// history shard, with static hosts on host.
func sqlitePersistence(dbPath, host string) persistence {
	return persistence{
		dataStores:      map[string]config.DataStore{storeName: {SQL: sqlConfig(dbPath, true)}},
		defaultStore:    storeName,
		visibilityStore: storeName,
		shards:          1,
		nodeHost:        host,
	}
}

// postgresPersistence keeps the default store and SQL visibility in p's
// two schemas, as a cluster node advertising nodeHost.
func postgresPersistence(p *postgres, nodeHost string) persistence {
	return persistence{
		dataStores: map[string]config.DataStore{
			"postgres":            {SQL: p.storeConfig(pgMainSchema)},
			"postgres-visibility": {SQL: p.storeConfig(pgVisibilitySchema)},
		},
		defaultStore:    "postgres",
		visibilityStore: "postgres-visibility",
		shards:          pgHistoryShards,
		cluster:         true,
		nodeHost:        nodeHost,
	}
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

// serverConfig builds the static server config: the frontend on host, the
// other services on the persistence's node host, its stores, archival off.
// The frontend also serves Temporal's HTTP API (which Nexus needs) on a
// free port.
func serverConfig(host string, ports servicePorts, store persistence, tlsOpts *TLS) *config.Config {
	frontendAddr := net.JoinHostPort(host, strconv.Itoa(ports.frontend))
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		// The server's own clients (system worker, Web UI) dial the node.
		frontendAddr = net.JoinHostPort(store.nodeHost, strconv.Itoa(ports.frontend))
	}
	var c config.Config
	c.Global.Membership.MaxJoinDuration = 30 * time.Second
	c.Global.Membership.BroadcastAddress = store.nodeHost

	c.Persistence.DefaultStore = store.defaultStore
	c.Persistence.VisibilityStore = store.visibilityStore
	c.Persistence.NumHistoryShards = store.shards
	c.Persistence.DataStores = store.dataStores

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

	service := func(bind string, port, membership int) config.Service {
		var s config.Service
		s.RPC.GRPCPort = port
		s.RPC.MembershipPort = membership
		s.RPC.BindOnIP = bind
		return s
	}
	frontend := service(host, ports.frontend, ports.membership[0])
	frontend.RPC.HTTPPort = ports.frontendHTTP
	c.Services = map[string]config.Service{
		string(primitives.FrontendService): frontend,
		string(primitives.HistoryService):  service(store.nodeHost, ports.history, ports.membership[1]),
		string(primitives.MatchingService): service(store.nodeHost, ports.matching, ports.membership[2]),
		string(primitives.WorkerService):   service(store.nodeHost, ports.worker, ports.membership[3]),
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

// serverOptions returns the options for temporal.NewServer. A single node
// names its services' hosts statically; a cluster's nodes find each other
// through ringpop, seeded from the database's cluster_membership table.
func serverOptions(host string, ports servicePorts, store persistence, logger serverLogger, dynamic map[string]any, tlsOpts *TLS) []temporal.ServerOption {
	opts := []temporal.ServerOption{
		temporal.WithConfig(serverConfig(host, ports, store, tlsOpts)),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithDynamicConfigClient(dynamicConfigClient(dynamic)),
	}
	if !store.cluster {
		hostPort := func(port int) static.Hosts {
			return static.SingleLocalHost(net.JoinHostPort(host, strconv.Itoa(port)))
		}
		opts = append(opts, temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: hostPort(ports.frontend),
			primitives.HistoryService:  hostPort(ports.history),
			primitives.MatchingService: hostPort(ports.matching),
			primitives.WorkerService:   hostPort(ports.worker),
		}))
	}
	return opts
}

// clusterPorts is how many ports past the frontend's a cluster node uses:
// the frontend's HTTP API, history, matching and worker, and the four
// services' membership ports.
const clusterPorts = 8

// pickPorts resolves the frontend port (0 means any free one) on host and
// the internal services' ports on store's node host: from nodePorts on
// (clusterPorts of them, each checked free) or, when it is 0, free ones.
// Only a cluster has membership ports.
func pickPorts(host string, frontend int, store persistence, nodePorts int) (servicePorts, error) {
	var p servicePorts
	var err error
	if p.frontend, err = resolvePort(host, frontend); err != nil {
		return p, fmt.Errorf("frontend: %w", err)
	}
	internal := []*int{&p.frontendHTTP, &p.history, &p.matching, &p.worker}
	if store.cluster {
		for i := range p.membership {
			internal = append(internal, &p.membership[i])
		}
	}
	for i, port := range internal {
		bind := store.nodeHost
		if i == 0 || (store.cluster && i == 4) {
			bind = host // the frontend's HTTP and membership ports
		}
		switch {
		case nodePorts != 0:
			*port, err = resolvePort(bind, nodePorts+i)
		case store.cluster:
			// All of a node's ports below 32768, as its membership
			// ports must be (maxMembershipPort).
			*port, err = freeLowPort(bind)
		default:
			*port, err = freePort(bind)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}
