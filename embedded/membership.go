package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// memberProbeTimeout bounds one connection attempt to a member's
// membership port.
const memberProbeTimeout = 2 * time.Second

// forgetDeadMembers deletes the rows of the cluster's membership table
// whose membership port refuses a TCP connection: left by a node that
// stopped or was killed less than Temporal's 20 s heartbeat cutoff ago.
//
// Temporal seeds each starting service's ringpop from the rows with a
// fresh heartbeat. A node restarted within that cutoff finds only its dead
// predecessor's ports and its own siblings, none of them ready, so no
// service is ever alone to bootstrap the ring: each join runs into its 30 s
// limit, and after five tries the service's start is fatal ("failed to
// start ringpop"; it took an embedded test binary down on CI). A refused
// connection means the address is up and nothing listens on the port, so
// the row is a dead member's; a member that does not answer at all (a
// network cut) is left alone, as are rows this node cannot reach or parse.
// A live member's ringpop listens before it writes its row, so it is never
// refused.
//
// It returns how many rows it deleted.
func (p *postgres) forgetDeadMembers(ctx context.Context) (int, error) {
	db, err := sql.Open("pgx", p.url)
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", p.redacted, p.scrub(err))
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT DISTINCT rpc_address, rpc_port FROM "+pgMainSchema+".cluster_membership")
	if err != nil {
		return 0, fmt.Errorf("reading the cluster membership in %s: %w", p.redacted, p.scrub(err))
	}
	type member struct {
		addr string
		port int
	}
	var members []member
	for rows.Next() {
		var m member
		if err := rows.Scan(&m.addr, &m.port); err != nil {
			rows.Close()
			return 0, fmt.Errorf("reading the cluster membership in %s: %w", p.redacted, p.scrub(err))
		}
		members = append(members, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("reading the cluster membership in %s: %w", p.redacted, p.scrub(err))
	}
	// Probed side by side: a host that does not answer costs one
	// timeout, not one per row.
	dead := make([]bool, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { dead[i] = refused(ctx, net.JoinHostPort(m.addr, strconv.Itoa(m.port))) })
	}
	wg.Wait()
	deleted := 0
	for i, m := range members {
		if !dead[i] {
			continue
		}
		res, err := db.ExecContext(ctx, "DELETE FROM "+pgMainSchema+".cluster_membership WHERE rpc_address = $1 AND rpc_port = $2", m.addr, m.port)
		if err != nil {
			return deleted, fmt.Errorf("forgetting dead member %s:%d in %s: %w", m.addr, m.port, p.redacted, p.scrub(err))
		}
		n, _ := res.RowsAffected()
		deleted += int(n)
	}
	return deleted, nil
}

// refused reports whether a TCP connection to hostPort is refused (a
// reset answers it: the host is up and nothing listens there).
func refused(ctx context.Context, hostPort string) bool {
	d := net.Dialer{Timeout: memberProbeTimeout}
	conn, err := d.DialContext(ctx, "tcp", hostPort)
	if err == nil {
		conn.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
