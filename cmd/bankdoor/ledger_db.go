package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/bankdoor/bankdoor/internal/secretfile"
	"net/url"
	"os"
)

// dbFlags are --db, the ledger's bbolt file or PostgreSQL URL, and the
// flags that give the database's password. The password is never taken
// from the command line, where process listings show it. ledger copy
// names the URL --to (see registerAs).
type dbFlags struct {
	db, passwordFile, passwordEnv string
	name                          string // the flag of db, "db" unless registerAs said otherwise
}

func (f *dbFlags) register(fs *flag.FlagSet, what string) {
	f.registerAs(fs, "db", what+": a bbolt file's path, or a PostgreSQL database's postgres://USER@HOST[:PORT]/DBNAME URL, without a password (required)")
}

// registerAs registers the database's flag as --name with usage, and the
// password flags.
func (f *dbFlags) registerAs(fs *flag.FlagSet, name, usage string) {
	f.name = name
	fs.StringVar(&f.db, name, "", usage)
	fs.StringVar(&f.passwordFile, "db-password-file", "", "read the PostgreSQL password from this file (mode 0600; one line)")
	fs.StringVar(&f.passwordEnv, "db-password-env", "", "read the PostgreSQL password from this environment variable (without either, PGPASSWORD or ~/.pgpass)")
}

// postgres reports whether the database is a PostgreSQL URL.
func (f *dbFlags) postgres() bool {
	return strings.HasPrefix(f.db, "postgres://") || strings.HasPrefix(f.db, "postgresql://")
}

// maxPasswordFile bounds --db-password-file.
const maxPasswordFile = 4096

// password checks the flags and returns the database's password, or ""
// to leave it to PostgreSQL's usual sources.
func (f *dbFlags) password() (string, error) {
	if !f.postgres() {
		if f.passwordFile != "" || f.passwordEnv != "" {
			return "", hint(fmt.Errorf("--db-password-file and --db-password-env are for a PostgreSQL --%s", f.name),
				"give --%s a postgres:// URL, or drop the password flag", f.name)
		}
		return "", nil
	}
	u, err := url.Parse(f.db)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", f.name, err)
	}
	if _, set := u.User.Password(); set || u.Query().Has("password") {
		return "", hint(fmt.Errorf("--%s holds a password, which process listings show", f.name),
			"remove it from the URL and pass --db-password-file FILE or --db-password-env VAR")
	}
	switch {
	case f.passwordFile != "" && f.passwordEnv != "":
		return "", hint(errors.New("--db-password-file and --db-password-env both given"), "pass one of them")
	case f.passwordFile != "":
		return readPasswordFile(f.passwordFile)
	case f.passwordEnv != "":
		p, ok := os.LookupEnv(f.passwordEnv)
		if !ok || p == "" {
			return "", hint(fmt.Errorf("--db-password-env: environment variable %s is not set or empty", f.passwordEnv),
				"export %s with the database password", f.passwordEnv)
		}
		return p, nil
	}
	return "", nil
}

func readPasswordFile(path string) (string, error) {
	b, err := secretfile.Read(path, maxPasswordFile)
	if err != nil {
		return "", fmt.Errorf("--db-password-file: %w", err)
	}
	p := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	switch {
	case p == "" || strings.ContainsAny(p, "\r\n"):
		return "", hint(fmt.Errorf("--db-password-file %s does not hold one line", path), "put the password alone on its first line")
	}
	return p, nil
}
