package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bankdoor/bankdoor/proxy"
)

// repeated is a flag that may be given many times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ", ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// downFlags say where the bank server is: a command after --, or --url.
type downFlags struct {
	url       string
	ca        string
	headers   repeated
	headerEnv repeated
	srv       *proxy.HTTPServer // built by check from the flags above
}

func (f *downFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "the bank server's MCP endpoint over streamable HTTP (https, or http to loopback); no command after --")
	fs.StringVar(&f.ca, "url-ca", "", "PEM CA certificates that verify --url's TLS certificate, instead of the system roots")
	fs.Var(&f.headers, "header", "'Name: value' sent with every request to --url (repeatable); visible in process listings, prefer --header-env for secrets")
	fs.Var(&f.headerEnv, "header-env", "'Name=ENVVAR': send header Name with the value of environment variable ENVVAR (repeatable)")
}

// check checks that exactly one downstream is given (argv is what follows
// --) and builds the HTTP one, reading secrets with getenv.
func (f *downFlags) check(argv []string, getenv func(string) string) error {
	switch {
	case f.url != "" && len(argv) > 0:
		return hint(errors.New("--url and a command after -- do not go together"), "give one bank server: its command after --, or its MCP endpoint with --url")
	case f.url == "" && len(argv) == 0:
		return hint(errNoCommand, "give the bank server's command after --, e.g. -- bankmcp, or its MCP endpoint with --url https://HOST/mcp")
	case f.url == "" && (f.ca != "" || len(f.headers) > 0 || len(f.headerEnv) > 0):
		return hint(errors.New("--url-ca, --header and --header-env need --url"), "they configure a bank server reached over HTTP: give its endpoint with --url, or drop them")
	}
	if f.url == "" {
		return nil
	}
	if _, err := proxy.CheckURL(f.url); errors.Is(err, proxy.ErrURLCredentials) {
		return hint(fmt.Errorf("--url: %w", err), "send credentials in a header read from the environment: --header-env 'Name=ENVVAR'")
	} else if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	var err error
	f.srv, err = f.server(getenv)
	return err
}

// server builds the HTTP downstream from the flags, reading secrets from
// the environment.
func (f *downFlags) server(getenv func(string) string) (*proxy.HTTPServer, error) {
	s := &proxy.HTTPServer{URL: f.url, Header: http.Header{}}
	if f.ca != "" {
		pool, err := proxy.LoadCA(f.ca)
		if err != nil {
			return nil, fmt.Errorf("--url-ca: %w", err)
		}
		s.RootCAs = pool
	}
	for _, h := range f.headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return nil, hint(fmt.Errorf("--header %q: no colon", h), "give --header 'Name: value'")
		}
		if err := addHeader(s.Header, name, strings.TrimSpace(value)); err != nil {
			return nil, fmt.Errorf("--header: %w", err)
		}
	}
	for _, h := range f.headerEnv {
		name, envvar, ok := strings.Cut(h, "=")
		if !ok || envvar == "" {
			return nil, hint(fmt.Errorf("--header-env %q: no environment variable named", h), "give --header-env 'Name=ENVVAR'")
		}
		value := getenv(envvar)
		if value == "" {
			return nil, hint(fmt.Errorf("--header-env %s: environment variable %s is not set or empty", h, envvar), "set %s to the header's value", envvar)
		}
		if err := addHeader(s.Header, name, value); err != nil {
			return nil, fmt.Errorf("--header-env %s: %w", name, err)
		}
	}
	return s, nil
}

func addHeader(h http.Header, name, value string) error {
	name = strings.TrimSpace(name)
	if err := proxy.CheckHeader(name, value); err != nil {
		return err
	}
	h.Add(name, value)
	return nil
}

// dial starts the bank server: the command argv, or the --url endpoint.
func (f *downFlags) dial(ctx context.Context, argv []string) (mcp.Connection, error) {
	if f.url == "" {
		return startServer(ctx, argv)
	}
	return proxy.DialHTTP(ctx, f.srv)
}
