package pgtest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestServer starts a server, reaches a fresh database over TCP with the
// password (and not without it) and a second one made without a test,
// restarts the server keeping committed
// data, and stops it, removing its directory.
func TestServer(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	s, err := Start(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("start-up took %v", time.Since(start))
	if v := s.Version(); v == "" || strings.ContainsRune(v, '/') {
		t.Errorf("Version() = %q, want a major version such as 15", v)
	}
	dir := s.dir
	var db DB
	t.Cleanup(func() { // after NewDB's, which drops the database
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
		if _, err := pgx.Connect(ctx, db.ConnString()); err == nil {
			t.Error("connected after Stop")
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("directory %s after Stop: %v", dir, err)
		}
	})
	db = s.NewDB(t)
	if strings.Contains(db.URL, db.Password) {
		t.Fatalf("URL %s holds the password", db.URL)
	}
	if c, err := pgx.Connect(ctx, db.URL); err == nil {
		c.Close(ctx)
		t.Fatal("connected over TCP without the password")
	}
	exec := func(sql string) {
		t.Helper()
		c, err := pgx.Connect(ctx, db.ConnString())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec("CREATE TABLE t (x int); INSERT INTO t VALUES (7)")
	// NewDatabase, without a test, makes another database, reachable
	// with the same password.
	other, err := s.NewDatabase()
	if err != nil || other.URL == db.URL {
		t.Fatalf("NewDatabase: %s, %v; want a second database", other.URL, err)
	}
	if c, err := pgx.Connect(ctx, other.ConnString()); err != nil {
		t.Fatal(err)
	} else {
		c.Close(ctx)
	}
	var fsync string
	c, err := pgx.Connect(ctx, db.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil || fsync != "on" {
		t.Errorf("fsync = %q, %v; want on", fsync, err)
	}
	c.Close(ctx)
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	exec("DO $$ BEGIN IF (SELECT x FROM t) <> 7 THEN RAISE 'lost the row'; END IF; END $$")
}
