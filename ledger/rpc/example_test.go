package rpc_test

import (
	"log"
	"log/slog"
	"net/http"

	"github.com/bankdoor/bankdoor/ledger"
	"github.com/bankdoor/bankdoor/ledger/rpc"
)

// Serving a ledger as bankdoor ledger serve does, without TLS: HTTP/1.1
// for the Connect protocol and h2c for gRPC, Append open only to holders
// of a token from the token file.
func Example() {
	agents, err := rpc.LoadDirectory("/etc/bankdoor/agents")
	if err != nil {
		log.Fatal(err)
	}
	signer, err := ledger.LoadSigner("/etc/bankdoor/log.key")
	if err != nil {
		log.Fatal(err)
	}
	l, err := ledger.Open("/var/lib/bankdoor/ledger.db", ledger.Options{Origin: signer.Name(), Signer: signer, Agents: agents})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	tokens, err := rpc.LoadTokens("/etc/bankdoor/tokens")
	if err != nil {
		log.Fatal(err)
	}
	svc := rpc.New(l, slog.Default())
	mux := http.NewServeMux()
	mux.Handle(svc.Handler(&rpc.Auth{Tokens: tokens}))
	mux.Handle("GET /healthz", svc.Health())
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Addr: "127.0.0.1:8443", Handler: mux, Protocols: &p}
	log.Fatal(srv.ListenAndServe())
}
