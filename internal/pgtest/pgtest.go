// Package pgtest runs a throw-away PostgreSQL server for tests: Debian's
// postgresql binaries, a cluster of its own in a temporary directory, a
// free loopback port, and a fresh database per test. It never connects to
// a server or a database it did not create.
//
// # Server
//
// [Start] finds the newest /usr/lib/postgresql/VERSION/bin (Debian's
// postgresql-VERSION package); if there is none it installs Debian's
// postgresql package (apt-get install -y --no-install-recommends
// postgresql, after apt-get update if that fails), which needs root, and
// says so through its log function. Then, in a new directory under
// os.TempDir:
//
//	initdb -D DIR/data -U postgres -A trust -E UTF8 --locale C
//	pg_ctl -D DIR/data -w -l DIR/log start -o "-c listen_addresses=127.0.0.1 -c port=PORT
//	    -c unix_socket_directories=DIR/run -c fsync=on -c synchronous_commit=on ..."
//
// PostgreSQL refuses to run as root, so when the test runs as root the
// directory is chowned to the postgres user (or nobody) and initdb,
// pg_ctl and the server run as that user (os/exec's
// SysProcAttr.Credential); when that user cannot reach os.TempDir (a
// private TMPDIR), the directory is made in its home directory instead. pg_hba.conf lets the superuser postgres in
// without a password on the unix socket only, which is how pgtest itself
// connects; TCP needs the password (SCRAM-SHA-256) of the role "bankdoor",
// which owns every database [Server.NewDB] creates. fsync stays on: the
// tests exercise the durability the ledger relies on.
//
// [Server.Stop] stops the server (pg_ctl stop -m fast) and removes the
// directory; [Server.Restart] stops and starts it on the same port, for
// fault tests.
package pgtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Role is the login role that owns the test databases.
const Role = "bankdoor"

// Server is a running throw-away PostgreSQL server.
type Server struct {
	bin      string // directory of initdb, pg_ctl, postgres
	dir      string // holds data, run (the socket) and log
	port     int
	cred     *syscall.Credential // nil unless running as root
	password string              // Role's

	mu  sync.Mutex
	dbs int // databases created, for their names
}

// DB is one fresh database of a Server.
type DB struct {
	// URL is a postgres:// URL of the database, as Role over TCP,
	// without the password.
	URL      string
	Password string
	name     string
}

// ConnString is URL with the password in it, for a library call.
func (d DB) ConnString() string {
	u, err := url.Parse(d.URL)
	if err != nil {
		panic(err) // NewDB made it
	}
	u.User = url.UserPassword(u.User.Username(), d.Password)
	return u.String()
}

// Start starts a new server. logf, if not nil, is told what Start
// installs and how long the start took.
func Start(logf func(format string, args ...any)) (*Server, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	begin := time.Now()
	bin, err := findBin(logf)
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin}
	s.password = rand.Text()
	if err := s.init(); err != nil {
		s.removeDir()
		return nil, err
	}
	if err := s.startFree(); err != nil {
		s.removeDir()
		return nil, err
	}
	if err := s.setup(); err != nil {
		s.Stop()
		return nil, err
	}
	logf("pgtest: PostgreSQL %s started on 127.0.0.1:%d in %v", s.Version(), s.port, time.Since(begin).Round(time.Millisecond))
	return s, nil
}

// findBin returns the newest Debian PostgreSQL bin directory, installing
// the postgresql package if there is none.
func findBin(logf func(string, ...any)) (string, error) {
	if bin := newestBin(); bin != "" {
		return bin, nil
	}
	if os.Geteuid() != 0 {
		return "", errors.New("pgtest: no PostgreSQL in /usr/lib/postgresql/*/bin and not root to install it: run apt-get install postgresql")
	}
	logf("pgtest: no PostgreSQL in /usr/lib/postgresql/*/bin; installing Debian's postgresql package")
	install := func() error {
		return run(nil, "apt-get", "install", "-y", "--no-install-recommends", "postgresql")
	}
	if err := install(); err != nil {
		if err := run(nil, "apt-get", "update"); err != nil {
			return "", fmt.Errorf("pgtest: installing postgresql: apt-get update: %w", err)
		}
		if err := install(); err != nil {
			return "", fmt.Errorf("pgtest: installing postgresql: %w", err)
		}
	}
	if bin := newestBin(); bin != "" {
		return bin, nil
	}
	return "", errors.New("pgtest: apt-get installed postgresql but there is still no /usr/lib/postgresql/*/bin/initdb")
}

func newestBin() string {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	best, bestV := "", -1.0
	for _, f := range found {
		v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(f))), 64)
		if err == nil && v > bestV {
			best, bestV = filepath.Dir(f), v
		}
	}
	return best
}

// init makes the directory and the cluster in it.
func (s *Server) init() error {
	home, err := s.asServerUser()
	if err != nil {
		return err
	}
	parent := os.TempDir()
	if s.cred != nil && !othersReach(parent) {
		// A private TMPDIR (mode 0700, as mktemp -d makes) keeps the
		// server's user out; its own home is a place it reaches.
		if home == "" || !othersReach(filepath.Dir(home)) {
			return fmt.Errorf("pgtest: the server runs as uid %d, which cannot reach %s (TMPDIR) and has no home directory to use instead", s.cred.Uid, parent)
		}
		parent = home
	}
	dir, err := os.MkdirTemp(parent, "bankdoor-pgtest-")
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	s.dir = dir
	if err := os.Mkdir(s.path("run"), 0o700); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		for _, p := range []string{dir, s.path("run")} {
			if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return fmt.Errorf("pgtest: %w", err)
			}
		}
	}
	if err := run(s.cred, filepath.Join(s.bin, "initdb"), "-D", s.path("data"), "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--locale", "C", "--no-sync"); err != nil {
		return fmt.Errorf("pgtest: initdb: %w", err)
	}
	hba := "local all postgres trust\nhost all " + Role + " 127.0.0.1/32 scram-sha-256\n"
	return s.writeOwned(s.path("data", "pg_hba.conf"), hba)
}

// asServerUser picks the user the server runs as: this one, or, as root,
// postgres or nobody; it returns that user's home directory if it has one.
func (s *Server) asServerUser() (home string, err error) {
	if os.Geteuid() != 0 {
		return "", nil
	}
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if fi, err := os.Stat(u.HomeDir); err == nil && fi.IsDir() && fi.Sys().(*syscall.Stat_t).Uid == uint32(uid) {
			home = u.HomeDir
		}
		return home, nil
	}
	return "", fmt.Errorf("pgtest: running as root and no unprivileged user to run PostgreSQL as: %w", errors.Join(errs...))
}

// othersReach reports whether a user who is neither owner nor in the group
// can pass through dir and every directory above it.
func othersReach(dir string) bool {
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		up := filepath.Dir(dir)
		if up == dir {
			return true
		}
		dir = up
	}
}

func (s *Server) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

// writeOwned writes a file in the cluster, owned by the server's user.
func (s *Server) writeOwned(path, text string) error {
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

// startFree starts the server on a free port, trying a few in case
// another process takes the one found first.
func (s *Server) startFree() error {
	var err error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			return err
		}
		if err = s.start(); err == nil {
			return nil
		}
	}
	return err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	opts := strings.Join([]string{
		"-c listen_addresses=127.0.0.1",
		"-c port=" + strconv.Itoa(s.port),
		"-c unix_socket_directories=" + s.path("run"),
		"-c fsync=on", "-c synchronous_commit=on",
		"-c max_connections=200", "-c shared_buffers=64MB",
	}, " ")
	err := run(s.cred, filepath.Join(s.bin, "pg_ctl"), "-D", s.path("data"), "-w", "-t", "60",
		"-l", s.path("log"), "-o", opts, "start")
	if err != nil {
		log, _ := os.ReadFile(s.path("log"))
		return fmt.Errorf("pgtest: pg_ctl start: %w\nserver log:\n%s", err, lastLines(string(log), 20))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// setup creates Role.
func (s *Server) setup() error {
	return s.super(func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE ROLE "+Role+" LOGIN PASSWORD "+quote(s.password))
		return err
	})
}

// super runs fn on a connection as the superuser over the unix socket.
func (s *Server) super(fn func(context.Context, *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres", s.path("run"), s.port))
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("pgtest: connecting as postgres: %w", err)
	}
	defer c.Close(context.Background())
	if err := fn(ctx, c); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	return nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Version returns the server's major version, as Debian names its
// package (postgresql-VERSION): "15".
func (s *Server) Version() string { return filepath.Base(filepath.Dir(s.bin)) }

// Port returns the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// NewDB creates a new, empty database owned by Role (NewDatabase) and
// drops it when tb's test ends.
func (s *Server) NewDB(tb testing.TB) DB {
	tb.Helper()
	db, err := s.NewDatabase()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		err := s.super(func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, "DROP DATABASE "+db.name+" WITH (FORCE)")
			return err
		})
		if err != nil {
			tb.Error(err)
		}
	})
	return db
}

// Snapshot copies db, which nothing may be connected to, into a new
// database (CREATE DATABASE ... TEMPLATE), dropped when tb's test ends:
// a backup to Restore later.
func (s *Server) Snapshot(tb testing.TB, db DB) DB {
	tb.Helper()
	snap := s.NewDB(tb) // its name, owner and cleanup; replaced at once
	if err := s.Restore(snap, db); err != nil {
		tb.Fatal(err)
	}
	return snap
}

// Restore makes db a copy of from, which nothing may be connected to, as
// restoring a backup would: db is dropped, every connection to it cut,
// and created again with from as its template.
func (s *Server) Restore(db, from DB) error {
	return s.super(func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, "DROP DATABASE "+db.name+" WITH (FORCE)"); err != nil {
			return err
		}
		_, err := c.Exec(ctx, "CREATE DATABASE "+db.name+" TEMPLATE "+from.name+" OWNER "+Role)
		return err
	})
}

// NewDatabase creates a new, empty database owned by Role, for a program
// that is not a test (bankdoor-report); it lasts until Stop.
func (s *Server) NewDatabase() (DB, error) {
	s.mu.Lock()
	s.dbs++
	name := fmt.Sprintf("test%d", s.dbs)
	s.mu.Unlock()
	err := s.super(func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CREATE DATABASE "+name+" OWNER "+Role)
		return err
	})
	if err != nil {
		return DB{}, err
	}
	u := url.URL{Scheme: "postgres", User: url.User(Role), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path: "/" + name, RawQuery: "sslmode=disable"}
	return DB{URL: u.String(), Password: s.password, name: name}, nil
}

// Restart stops the server (pg_ctl stop -m fast: connections are cut,
// committed transactions kept) and starts it again on the same port.
func (s *Server) Restart() error {
	if err := s.stop(); err != nil {
		return err
	}
	return s.start()
}

// Down stops the server as Restart does, keeping its data and port; Up
// starts it again.
func (s *Server) Down() error { return s.stop() }

// Up starts a server Down stopped.
func (s *Server) Up() error { return s.start() }

func (s *Server) stop() error {
	if err := run(s.cred, filepath.Join(s.bin, "pg_ctl"), "-D", s.path("data"), "-w", "-m", "fast", "stop"); err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %w", err)
	}
	return nil
}

// Stop stops the server and removes its directory.
func (s *Server) Stop() error {
	err := s.stop()
	return errors.Join(err, s.removeDir())
}

func (s *Server) removeDir() error {
	if s.dir == "" {
		return nil
	}
	return os.RemoveAll(s.dir)
}

// run runs a command, as cred's user if not nil, and returns its output
// in the error.
func run(cred *syscall.Credential, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PG") })
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = "/"
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return nil
}

// Private starts a server of tb's own (for a test that stops it, say),
// stopped when tb ends; a failure to start fails tb.
func Private(tb testing.TB) *Server {
	tb.Helper()
	srv, err := Start(tb.Logf)
	if err != nil {
		tb.Fatalf("starting a PostgreSQL of the test's own: %v", err)
	}
	tb.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			tb.Errorf("stopping the test's PostgreSQL: %v", err)
		}
	})
	return srv
}

// Shared is one Server for the tests of one test binary, started by the
// first NewDB. Declare it in a _test.go file and call Stop from TestMain
// after m.Run.
type Shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Server returns the shared server, starting it first if need be; a
// failure to start fails tb.
func (sh *Shared) Server(tb testing.TB) *Server {
	tb.Helper()
	sh.once.Do(func() { sh.srv, sh.err = Start(tb.Logf) })
	if sh.err != nil {
		tb.Fatalf("starting the test PostgreSQL: %v", sh.err)
	}
	return sh.srv
}

// NewDB is Server(tb).NewDB(tb).
func (sh *Shared) NewDB(tb testing.TB) DB {
	tb.Helper()
	return sh.Server(tb).NewDB(tb)
}

// Stop stops the server if it was started.
func (sh *Shared) Stop() error {
	if sh.srv == nil {
		return nil
	}
	return sh.srv.Stop()
}
