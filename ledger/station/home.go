package station

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bankdoor/bankdoor/internal/agentkey"
)

// HomeChains returns the Config.Chains of the receipts directory receipts
// whose keys live in the key directory home ($BANKDOOR_HOME): receipts
// itself, signed by home's key, and receipts/NAME for each agent key in
// home/agents/NAME (see package internal/agentkey for the files), each if
// its key and its directory exist. A key that cannot be read is an error;
// the chains found are returned with it.
func HomeChains(receipts, home string) func() ([]Chain, error) {
	return func() ([]Chain, error) {
		var chains []Chain
		var errs []error
		add := func(dir, keyDir string) {
			pub, err := agentkey.LoadPublic(filepath.Join(keyDir, agentkey.PublicFile))
			if errors.Is(err, fs.ErrNotExist) {
				return
			} else if err != nil {
				errs = append(errs, err)
				return
			}
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
				chains = append(chains, Chain{Dir: dir, Pub: pub})
			}
		}
		add(receipts, home)
		agents := filepath.Join(home, "agents")
		ents, err := os.ReadDir(agents)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("list the agents' keys: %w", err))
		}
		for _, e := range ents {
			if e.IsDir() {
				add(filepath.Join(receipts, e.Name()), filepath.Join(agents, e.Name()))
			}
		}
		return chains, errors.Join(errs...)
	}
}
