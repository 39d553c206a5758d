package attacks

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Table formats results as an aligned text table, one attack per line:
// id, expected rule, rule denied with, receipt, whether the bank was
// reached, cents moved, and "ok" or the first problem.
func Table(rs []Result) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ATTACK\tWANT\tGOT\tRECEIPT\tREACHED\tMOVED\tVERDICT")
	for _, r := range rs {
		verdict := "ok"
		if p := r.Problems(); len(p) > 0 {
			verdict = "FAIL: " + p[0]
		}
		got := r.Rule
		if got == "" {
			got = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.Attack.ID, r.Attack.Rule, got, orDash(r.Receipt), len(r.Reached), r.Moved, verdict)
	}
	w.Flush()
	return b.String()
}

// ControlTable formats the results of a control run: id, whether the
// bank was reached, cents moved, and the bank's answer.
func ControlTable(rs []Result) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ATTACK\tVARIANT\tREACHED\tMOVED\tANSWER")
	for _, r := range rs {
		answer := strings.Join(strings.Fields(r.Message), " ")
		if r := []rune(answer); len(r) > 100 {
			answer = string(r[:100]) + "…"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\n", r.Attack.ID, orDash(r.Attack.Variant), len(r.Reached), r.Moved, answer)
	}
	w.Flush()
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
