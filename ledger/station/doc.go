// Package station keeps the evidence of every bankdoor proxy that shares
// one receipts directory on one machine: it owns the receipt writers of a
// proxy process, the shipping of receipts to the ledger and, for the
// embedded ledger, the ledger file and its anchoring loop, and it starts
// and stops them in a fixed order.
//
// # Chains and the receipts directory
//
// A receipts directory R holds one hash chain per signing key: R itself
// holds the chain of the key in $BANKDOOR_HOME, and each subdirectory
// R/NAME the chain of the key in $BANKDOOR_HOME/agents/NAME (a gateway
// serving agents over HTTP). Any number of processes write to one chain
// at once: each receipt is written under a lock on the chain's directory
// held only for that write (see package ledger/receipt), so the chain
// stays one chain whatever the interleaving.
//
// # The holder
//
// Of all the stations on R, at most one at a time is the holder; the
// others are standbys, which only write receipts. The holder ships every
// chain under R to the ledger (see package ledger/spool: the directory is
// the spool):
//
//   - With the embedded ledger, holding means holding the lock on
//     R/.ship.lock and then having the ledger's bbolt file open (bbolt's
//     exclusive file lock); the ship lock is released only after the file
//     is closed. The holder enrolls the key of every chain it ships, and
//     runs the anchoring loop to the witnesses.
//   - With a remote ledger, holding means holding the lock on R/.ship.lock.
//
// So a ledger file that is held while R/.ship.lock is free is held by a
// process that ships nothing here (a ledger server, a tool, a stuck
// process, or a proxy of another receipts directory sharing the file): a
// lapse. A standby that finds one logs it once, with the
// file and, on Linux, the pid holding it, reports it ([Station.Lapsed]),
// counts the receipts written meanwhile ([Station.Backlog]) and takes
// over as soon as the file is free.
//
// A standby tries to become the holder every Config.Takeover (default
// 250 ms). The locks are released by the kernel when their process dies,
// SIGKILL included, so when the holder stops or dies a standby takes over
// within about that interval: it resumes shipping from the ledger's head,
// which the ledger, not the station, records, and so no receipt is
// shipped twice or skipped. The holder looks for receipts written by other
// processes, and for new chains, every Config.Poll (default 500 ms); its
// own process's receipts wake it at once.
//
// # Lifecycle
//
// [Open] checks the ledger and creates nothing: an embedded ledger file
// that exists is opened (and its log key checked) unless another process
// holds it. [Station.Chain] opens a chain for writing, creating its
// directory. [Station.Start] creates the embedded ledger's file if it is
// missing, then holds or stands by. [Station.Close] stops everything in
// this order:
//
//  1. the receipt writers (the caller has stopped the relays that write
//     through them: no receipt is written after Close begins);
//  2. the standby's takeover attempts, or the holder's polling; a
//     standby then tries once more to take over, so that the last
//     proxy to stop ships what every proxy wrote;
//  3. the holder's shippers, each after one final attempt bounded in
//     time, in parallel, after a last look for chains that other
//     processes started since the last poll (they are shipped too);
//  4. the anchoring loop, after one final bounded attempt to get the
//     latest checkpoint cosigned;
//  5. the ledger file, or the ship lock: only now can a standby take over.
package station
