// Package promserver runs a real Prometheus server for tests: Debian's
// prometheus package (2.42 on Debian 12), fetched with package debpkg
// unless a prometheus is on PATH, scraping the targets a test names, so
// that a test of bankdoor's metrics reads them as a monitoring system
// would, through Prometheus's HTTP API and PromQL.
//
// Start runs the program on 127.0.0.1, on a port the kernel picks (found
// as package proclisten says, so Start works on Linux only), with
// everything in a directory of its own:
//
//	DIR/prometheus.yml  its configuration: every job scraped each
//	                    ScrapeInterval, with that as its timeout too
//	DIR/tsdb/           its time-series database (--storage.tsdb.path)
//	DIR/output.log      what it writes to stdout and stderr
//
// and returns once /-/ready answers 200. Query evaluates an instant
// PromQL query with the HTTP API (/api/v1/query), WaitFor polls one until
// a condition holds, and WaitUp polls /api/v1/targets until every
// target's last scrape succeeded. The API's JSON is decoded with
// encoding/json into prometheus/common's model types (client_golang's
// api/prometheus/v1 would bring json-iterator, and an init that
// registers decoders globally, on Go releases before 1.27). Prometheus finds its targets some seconds after it starts
// (its discovery manager passes them on every 5 s): a test waits with
// WaitUp or WaitFor, never for a fixed time. StartTest does all of that
// for a test and stops and removes it at the test's end.
//
// # Use in a test
//
// An end-to-end test of bankdoor's metrics runs the gateway and the
// ledger with --metrics-addr, has Prometheus scrape both, waits until
// both are up, makes a known burst of calls the gate denies, and reads
// the deny counter back through PromQL:
//
//	prom := promserver.StartTest(t, // logs "prometheus: prometheus 2.42.0+ds-5+b6 (/path/to/prometheus)"
//		promserver.Job{Name: "gateway", Targets: []string{gatewayMetricsAddr}},
//		promserver.Job{Name: "ledger", Targets: []string{ledgerMetricsAddr}})
//	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
//	defer cancel()
//	if err := prom.WaitUp(ctx); err != nil { // about 5 s: discovery, then a scrape
//		t.Fatal(err) // names each target not up and its scrape error
//	}
//	// ... 5 tools/call of "transfer" through the gateway, each denied ...
//	q := `sum(bankdoor_calls_total{job="gateway",decision="deny",rule="name.write_word"})`
//	if _, err := prom.WaitFor(ctx, q, func(v model.Vector) bool {
//		return len(v) == 1 && v[0].Value == 5
//	}); err != nil {
//		t.Fatal(err) // says what Prometheus last reported
//	}
//
// The targets are HOST:PORT of the /metrics listeners, so the test must
// know the ports the gateway and ledger serve metrics on. A labelled
// counter's series exists only from its first increment, so before the
// burst the query gives an empty vector, not 0. To report the Prometheus
// version used, call Binary (StartTest already logs it).
package promserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/bankdoor/bankdoor/internal/debpkg"
	"github.com/bankdoor/bankdoor/internal/proclisten"
)

// ScrapeInterval is how often Prometheus scrapes each target, and how
// long one scrape may take.
const ScrapeInterval = time.Second

// pollInterval is how often WaitFor and WaitUp ask again, and Start asks
// whether Prometheus is ready.
const pollInterval = 100 * time.Millisecond

// startTimeout bounds how long Start waits for Prometheus to listen and
// then to be ready.
const startTimeout = 60 * time.Second

// A Job is a scrape job: Prometheus scrapes http://TARGET/metrics (or
// MetricsPath) for each of its Targets, and labels what it reads
// job=NAME and instance=TARGET.
type Job struct {
	Name        string
	Targets     []string // host:port
	MetricsPath string   // "" is /metrics
}

// Binary returns Debian's prometheus program: the one on PATH if there
// is one, else the one package debpkg fetches.
func Binary(ctx context.Context) (debpkg.Program, error) {
	return debpkg.Find(ctx, "prometheus", "usr/bin/prometheus")
}

// StartTest starts Prometheus for the test t, scraping jobs, in a
// directory of t.TempDir(), with Binary; it logs the program, its
// version and how long finding and starting it took, and fails t if
// Prometheus cannot be had or does not start.
// When t ends, Prometheus is stopped, and its output logged if t failed.
func StartTest(t testing.TB, jobs ...Job) *Server {
	t.Helper()
	begin := time.Now()
	prog, err := Binary(t.Context())
	if err != nil {
		t.Fatalf("Debian's prometheus package: %v", err)
	}
	found := time.Now()
	s, err := Start(t.Context(), prog.Path, t.TempDir(), jobs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("prometheus: %s, found in %v, ready %v later at %s", prog, found.Sub(begin).Round(time.Millisecond), time.Since(found).Round(time.Millisecond), s.URL)
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", s.Output())
		}
	})
	return s
}

// Server is a running Prometheus.
type Server struct {
	URL   string // http://127.0.0.1:PORT
	jobs  []Job
	child *proclisten.Child
	http  *http.Client
	out   string // DIR/output.log
}

// Start runs the Prometheus program bin with its files in dir, which
// must exist, scraping jobs, and returns once it is ready or fails when
// ctx ends first; Stop ends it.
func Start(ctx context.Context, bin, dir string, jobs ...Job) (*Server, error) {
	if err := configure(filepath.Join(dir, "prometheus.yml"), jobs); err != nil {
		return nil, err
	}
	s := &Server{jobs: jobs, out: filepath.Join(dir, "output.log"), http: &http.Client{
		Transport: &http.Transport{DialContext: (&net.Dialer{}).DialContext}, // loopback: no proxy
	}}
	out, err := os.Create(s.out)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child has its own copy of the descriptor
	cmd := exec.Command(bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = out, out
	if s.child, err = proclisten.Start(cmd, startTimeout); err != nil {
		return nil, fmt.Errorf("prometheus %s: %w; its output:\n%s", bin, err, s.Output())
	}
	s.URL = "http://" + s.child.Addr.String()
	if err := s.ready(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("prometheus %s: %w; its output:\n%s", bin, err, s.Output())
	}
	return s, nil
}

// config is the part of Prometheus's configuration file that Start
// writes.
type config struct {
	Global struct {
		ScrapeInterval string `yaml:"scrape_interval"`
		ScrapeTimeout  string `yaml:"scrape_timeout"`
	} `yaml:"global"`
	ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
}

type scrapeConfig struct {
	JobName       string `yaml:"job_name"`
	MetricsPath   string `yaml:"metrics_path,omitempty"`
	StaticConfigs []struct {
		Targets []string `yaml:"targets"`
	} `yaml:"static_configs"`
}

// configure writes the configuration file that scrapes jobs to path.
func configure(path string, jobs []Job) error {
	var c config
	c.Global.ScrapeInterval = model.Duration(ScrapeInterval).String()
	c.Global.ScrapeTimeout = c.Global.ScrapeInterval
	for _, j := range jobs {
		if j.Name == "" || len(j.Targets) == 0 {
			return fmt.Errorf("scrape job %+v: a job needs a name and targets", j)
		}
		sc := scrapeConfig{JobName: j.Name, MetricsPath: j.MetricsPath}
		sc.StaticConfigs = append(sc.StaticConfigs, struct {
			Targets []string `yaml:"targets"`
		}{j.Targets})
		c.ScrapeConfigs = append(c.ScrapeConfigs, sc)
	}
	b, err := yaml.Marshal(&c)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// ready polls /-/ready until it answers 200 (Prometheus listens before
// its database is open), Prometheus exits, ctx ends or startTimeout
// passes.
func (s *Server) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/-/ready", nil)
		if err != nil {
			return err
		}
		resp, err := s.http.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/-/ready answered %s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %v)", context.Cause(ctx), err)
		case <-s.child.Exited():
			return errors.New("exited before it was ready")
		case <-tick.C:
		}
	}
}

// Query evaluates the PromQL expression promql at the present time, and
// returns its samples; an expression that is not an instant vector (a
// scalar, a string) is an error.
func (s *Server) Query(ctx context.Context, promql string) (model.Vector, error) {
	var data struct {
		ResultType model.ValueType `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := s.get(ctx, "/api/v1/query", url.Values{"query": {promql}}, &data); err != nil {
		return nil, fmt.Errorf("query %q: %w", promql, err)
	}
	if data.ResultType != model.ValVector {
		return nil, fmt.Errorf("query %q: a %v, not a vector", promql, data.ResultType)
	}
	var vec model.Vector
	if err := json.Unmarshal(data.Result, &vec); err != nil {
		return nil, fmt.Errorf("query %q: %w", promql, err)
	}
	return vec, nil
}

// get asks the HTTP API for path with query, and decodes the data of a
// "success" answer into data. An "error" answer is an error with its
// errorType and error.
func (s *Server) get(ctx context.Context, path string, query url.Values, data any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path+"?"+query.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s answered %s, not the API's JSON: %w", path, resp.Status, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s answered %s: %s: %s", path, resp.Status, r.ErrorType, r.Error)
	}
	return json.Unmarshal(r.Data, data)
}

// WaitFor evaluates promql every pollInterval until ok holds for its
// samples, and returns them; it fails when ctx ends first, with the
// samples it last gave (or its last error, if it never gave any).
func (s *Server) WaitFor(ctx context.Context, promql string, ok func(model.Vector) bool) (model.Vector, error) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last model.Vector
	var lastErr error
	for {
		vec, err := s.Query(ctx, promql)
		switch {
		case err != nil:
			lastErr = err
		case ok(vec):
			return vec, nil
		default:
			last, lastErr = vec, nil
		}
		select {
		case <-ctx.Done():
			if last == nil && lastErr != nil {
				return nil, fmt.Errorf("waiting for %q: %w (last: %w)", promql, context.Cause(ctx), lastErr)
			}
			return last, fmt.Errorf("waiting for %q: %w; it last gave %v", promql, context.Cause(ctx), last)
		case <-tick.C:
		}
	}
}

// A Target is one of Prometheus's active scrape targets, as
// /api/v1/targets lists it.
type Target struct {
	Labels    model.LabelSet `json:"labels"` // job and instance among them
	ScrapeURL string         `json:"scrapeUrl"`
	Health    string         `json:"health"` // "up", "down" or "unknown" (not scraped yet)
	LastError string         `json:"lastError"`
}

// Targets returns Prometheus's active targets.
func (s *Server) Targets(ctx context.Context) ([]Target, error) {
	var data struct {
		Active []Target `json:"activeTargets"`
	}
	if err := s.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &data); err != nil {
		return nil, fmt.Errorf("listing targets: %w", err)
	}
	return data.Active, nil
}

// WaitUp polls the targets every pollInterval until each target of each
// job Start was given has health "up" (its last scrape succeeded); it
// fails when ctx ends first, naming the targets last seen not up and
// their last scrape errors (or the last error of the API, if it never
// listed the targets).
func (s *Server) WaitUp(ctx context.Context) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last []string
	var lastErr error
	for {
		down, err := s.down(ctx)
		switch {
		case err != nil:
			lastErr = err
		case len(down) == 0:
			return nil
		default:
			last = down
		}
		select {
		case <-ctx.Done():
			if last == nil {
				return fmt.Errorf("waiting for the targets to be up: %w (last: %w)", context.Cause(ctx), lastErr)
			}
			return fmt.Errorf("waiting for the targets to be up: %w; not up: %v", context.Cause(ctx), last)
		case <-tick.C:
		}
	}
}

// down returns the configured targets whose health is not "up", each as
// JOB/TARGET and its health and last error.
func (s *Server) down(ctx context.Context) ([]string, error) {
	active, err := s.Targets(ctx)
	if err != nil {
		return nil, err
	}
	health := map[[2]string]Target{}
	for _, a := range active {
		health[[2]string{string(a.Labels["job"]), string(a.Labels["instance"])}] = a
	}
	var down []string
	for _, j := range s.jobs {
		for _, target := range j.Targets {
			a, ok := health[[2]string{j.Name, target}]
			switch {
			case !ok:
				down = append(down, j.Name+"/"+target+" (not discovered yet)")
			case a.Health != "up":
				down = append(down, fmt.Sprintf("%s/%s (%s: %q)", j.Name, target, a.Health, a.LastError))
			}
		}
	}
	return down, nil
}

// Output returns what Prometheus has written to stdout and stderr so far.
func (s *Server) Output() string {
	b, err := os.ReadFile(s.out)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", s.out, err)
	}
	return string(b)
}

// Stop kills Prometheus (SIGKILL: its database is a test's, thrown away)
// and waits for it to exit.
func (s *Server) Stop() { s.child.Stop() }
