package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bankdoor/bankdoor/internal/pgtest"
)

// pg is the test binary's PostgreSQL, started by the first test that
// needs it.
var pg pgtest.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	if err := pg.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func openPostgres(t *testing.T, db pgtest.DB, readOnly bool) *Postgres {
	t.Helper()
	s, err := OpenPostgres(context.Background(), db.URL, db.Password, readOnly)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPostgres(t *testing.T) {
	testStorage(t, func(t *testing.T) Store { return openPostgres(t, pg.NewDB(t), false) })
}

// TestPostgresReopen reopens a database read-only: the data is there and
// Update is refused. A second writer's open finds the schema made.
func TestPostgresReopen(t *testing.T) {
	db := pg.NewDB(t)
	s := openPostgres(t, db, false)
	mustUpdate(t, s, writeSample)
	want := readAll(t, s, MetaSize)
	s.Close()
	w := openPostgres(t, db, false)
	w.Close()
	r := openPostgres(t, db, true)
	defer r.Close()
	if got := readAll(t, r, MetaSize); len(got.Entries) != 2 || got.Meta[MetaSize] != want.Meta[MetaSize] {
		t.Fatalf("after reopen: %+v, want %+v", got, want)
	}
	if err := r.Update(func(tx Tx) error { return nil }); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Update on a read-only store = %v, want ErrReadOnly", err)
	}
}

// TestPostgresSchema refuses a database with no ledger read-only, and one
// whose schema is newer than this code's.
func TestPostgresSchema(t *testing.T) {
	db := pg.NewDB(t)
	if _, err := OpenPostgres(context.Background(), db.URL, db.Password, true); !errors.Is(err, ErrSchema) {
		t.Errorf("read-only open of an empty database = %v, want ErrSchema", err)
	}
	openPostgres(t, db, false).Close()
	exec(t, db, "UPDATE ledger_schema SET version = version + 1")
	for _, ro := range []bool{false, true} {
		_, err := OpenPostgres(context.Background(), db.URL, db.Password, ro)
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), fmt.Sprint("version ", SchemaVersion+1)) {
			t.Errorf("open (read-only %v) of a newer schema = %v; want ErrSchema naming version %d", ro, err, SchemaVersion+1)
		}
	}
}

// exec runs sql on db directly.
func exec(t *testing.T, db pgtest.DB, sql string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, db.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresPages reads more rows than one page holds, with reads of
// the same transaction inside the callbacks, as fsck does.
func TestPostgresPages(t *testing.T) {
	s := openPostgres(t, pg.NewDB(t), false)
	defer s.Close()
	const n = 2*pageRows + 7
	mustUpdate(t, s, func(tx Tx) error {
		for i := range uint64(n) {
			if err := errors.Join(tx.PutEntry(i, IndexKey(i)), tx.PutLeafIndex(IndexKey(i), i)); err != nil {
				return err
			}
		}
		return nil
	})
	mustView(t, s, func(tx Tx) error {
		next := uint64(5)
		err := tx.ForEachEntry(5, func(i uint64, d []byte) error {
			if i != next {
				return fmt.Errorf("entry %d after %d", i, next-1)
			}
			next++
			j, ok, err := tx.LeafIndex(d)
			if !ok || err != nil || j != i {
				return fmt.Errorf("LeafIndex(entry %d) = %d, %v, %v", i, j, ok, err)
			}
			return nil
		})
		if err != nil || next != n {
			t.Errorf("ForEachEntry(5): %v, stopped before %d; want %d", err, next, n)
		}
		leaves := 0
		err = tx.ForEachLeaf(func([]byte, uint64) error { leaves++; return nil })
		if err != nil || leaves != n {
			t.Errorf("ForEachLeaf: %v, %d leaves; want %d", err, leaves, n)
		}
		return nil
	})
}

// TestPostgresWriterLock: the Updates of two stores (two processes) on
// one database run one at a time. B's Update waits, on the writer lock,
// while A's is open, and then sees what A committed: B adds one to the
// value A wrote.
func TestPostgresWriterLock(t *testing.T) {
	db := pg.NewDB(t)
	a, b := openPostgres(t, db, false), openPostgres(t, db, false)
	defer a.Close()
	defer b.Close()
	inA, release := make(chan struct{}), make(chan struct{})
	releaseA := sync.OnceFunc(func() { close(release) })
	defer releaseA() // before the Closes, which wait for A's connection
	aDone := make(chan error, 1)
	go func() {
		aDone <- a.Update(func(tx Tx) error {
			if err := tx.SetMeta("n", IndexKey(1)); err != nil {
				return err
			}
			if err := tx.PutEntry(0, []byte("a")); err != nil { // sent now: the read below flushes
				return err
			}
			if _, err := tx.Entry(0); err != nil {
				return err
			}
			close(inA)
			<-release
			return nil
		})
	}()
	<-inA
	bDone := make(chan error, 1)
	go func() {
		bDone <- b.Update(func(tx Tx) error {
			v, err := tx.Meta("n")
			if err != nil {
				return err
			}
			if v == nil {
				return errors.New("B's Update ran before A's committed")
			}
			n, err := ParseIndex(v)
			if err != nil {
				return err
			}
			return tx.SetMeta("n", IndexKey(n+1))
		})
	}()
	waitLockWaiter(t, db)
	releaseA()
	if err := errors.Join(<-aDone, <-bDone); err != nil {
		t.Fatal(err)
	}
	mustView(t, a, func(tx Tx) error {
		if v, _ := tx.Meta("n"); string(v) != string(IndexKey(2)) {
			t.Errorf("meta n = %x after both Updates, want 2", v)
		}
		return nil
	})
}

// waitLockWaiter waits until a session of db waits for an advisory lock.
func waitLockWaiter(t *testing.T, db pgtest.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, db.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for {
		var n int
		err := c.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()`).Scan(&n)
		if err != nil {
			t.Fatalf("no session waited for the writer lock: %v", err)
		}
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no session waited for the writer lock within a minute")
		case <-time.After(5 * time.Millisecond): // polling a condition, not deciding a race
		}
	}
}
