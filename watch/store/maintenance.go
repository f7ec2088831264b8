package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/notify"
	"github.com/sluicehq/sluice/watch"
)

// maxReasonBytes bounds a maintenance window's reason.
const maxReasonBytes = 200

func (s *sqlStore) AddMaintenance(ctx context.Context, w notify.Window) (notify.Window, error) {
	w.ID = ""
	w.Start, w.End = w.Start.UTC().Truncate(time.Microsecond), w.End.UTC().Truncate(time.Microsecond)
	if err := w.Validate(); err != nil {
		return w, fmt.Errorf("recording a maintenance window: %w", err)
	}
	if len(w.Provider) > watch.MaxIDBytes || len(w.Dataset) > watch.MaxIDBytes {
		return w, errors.New("recording a maintenance window: provider or dataset too long")
	}
	if len(w.Reason) > maxReasonBytes {
		cut := maxReasonBytes
		for cut > 0 && w.Reason[cut]&0xC0 == 0x80 {
			cut--
		}
		w.Reason = w.Reason[:cut]
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var id int64
		if err := tx.QueryRowContext(ctx, s.d.rebind(`INSERT INTO maintenance (provider, dataset, start_at, end_at, reason, created_at)
VALUES (?, ?, ?, ?, ?, ?) RETURNING id`), w.Provider, w.Dataset, us(w.Start), us(w.End), w.Reason, time.Now().UnixMicro()).Scan(&id); err != nil {
			return err
		}
		w.ID = strconv.FormatInt(id, 10)
		return nil
	})
	if err != nil {
		return w, fmt.Errorf("recording a maintenance window in %s: %w", s.d.describe, err)
	}
	return w, nil
}

func (s *sqlStore) Maintenance(ctx context.Context, endingAfter time.Time) ([]notify.Window, error) {
	rows, err := s.query(ctx, "SELECT id, provider, dataset, start_at, end_at, reason FROM maintenance WHERE end_at > ? ORDER BY start_at, id", us(endingAfter))
	if err != nil {
		return nil, fmt.Errorf("reading maintenance windows from %s: %w", s.d.describe, err)
	}
	defer rows.Close()
	var out []notify.Window
	for rows.Next() {
		var w notify.Window
		var id, start, end int64
		if err := rows.Scan(&id, &w.Provider, &w.Dataset, &start, &end, &w.Reason); err != nil {
			return nil, fmt.Errorf("reading maintenance windows from %s: %w", s.d.describe, err)
		}
		w.ID, w.Start, w.End = strconv.FormatInt(id, 10), fromUS(start), fromUS(end)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading maintenance windows from %s: %w", s.d.describe, err)
	}
	return out, nil
}

func (s *sqlStore) EndMaintenance(ctx context.Context, id string, at time.Time) (notify.Window, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return notify.Window{}, fmt.Errorf("ending maintenance window %q: %w", id, ErrNoMaintenance)
	}
	var w notify.Window
	err = s.write(ctx, func(tx *sql.Tx) error {
		var start, end int64
		if err := tx.QueryRowContext(ctx, s.d.rebind("SELECT provider, dataset, start_at, end_at, reason FROM maintenance WHERE id = ?"), n).
			Scan(&w.Provider, &w.Dataset, &start, &end, &w.Reason); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return ErrNoMaintenance
			}
			return err
		}
		w.ID, w.Start, w.End = id, fromUS(start), fromUS(end)
		at := at.UTC().Truncate(time.Microsecond)
		if !at.Before(w.End) {
			return nil
		}
		if at.Before(w.Start) {
			at = w.Start // a window ended before it began covers nothing
		}
		w.End = at
		_, err := s.exec(ctx, tx, "UPDATE maintenance SET end_at = ? WHERE id = ?", us(at), n)
		return err
	})
	if errors.Is(err, ErrNoMaintenance) {
		return notify.Window{}, fmt.Errorf("ending maintenance window %s: %w", id, ErrNoMaintenance)
	}
	if err != nil {
		return notify.Window{}, fmt.Errorf("ending maintenance window %s in %s: %w", id, s.d.describe, err)
	}
	return w, nil
}
