package policy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// addSeeds adds the sample and shipped policies to f's corpus, besides the
// committed files under testdata/fuzz.
func addSeeds(f *testing.F) {
	for _, glob := range []string{"testdata/*.yaml", "../../policies/*.yaml"} {
		paths, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

// FuzzParse checks that Parse never panics, that it returns either a
// policy or *Error values naming the file, and that a policy that parses
// survives a round trip through its canonical form: the canonical text
// parses again to the same canonical text.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("f.yaml", data)
		if err != nil {
			checkFuzzErrors(t, p, err)
			return
		}
		again, err := Parse("f.yaml", data)
		if err != nil {
			t.Fatalf("second Parse failed: %v", err)
		}
		if diff := cmp.Diff(p, again, cmpRegexp); diff != "" {
			t.Fatalf("Parse is not deterministic:\n%s", diff)
		}
		c := canonical(p)
		q, err := Parse("f.yaml", c)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, c)
		}
		if c2 := canonical(q); !bytes.Equal(c, c2) {
			t.Fatalf("canonical form changed on re-parse:\n%s\n---\n%s", c, c2)
		}
		checkArgShapes(t, p)
		Lint(p)
	})
}

// checkArgShapes checks what the gate relies on in every argument of a
// parsed policy: an array has scalar items and bounds within the limits;
// any other argument has neither.
func checkArgShapes(t *testing.T, p *Policy) {
	t.Helper()
	scalar := []string{"string", "integer", "number", "boolean"}
	for _, s := range p.Servers {
		for _, tool := range s.Tools {
			for _, a := range tool.Args {
				if a.Type != "array" {
					if !slices.Contains(scalar, a.Type) || a.Items != nil || a.MinItems != 0 || a.MaxItems != 0 {
						t.Fatalf("argument %q: type %q, items %v, bounds %d..%d", a.Name, a.Type, a.Items, a.MinItems, a.MaxItems)
					}
					continue
				}
				if a.Items == nil || !slices.Contains(scalar, a.Items.Type) || a.Items.Required || a.Items.Items != nil ||
					a.MaxItems < 1 || a.MaxItems > MaxItemsLimit || a.MinItems < 0 || a.MinItems > a.MaxItems ||
					a.Re != nil || a.Enum != nil || a.MinLength != nil || a.MaxLength != nil || a.Min != nil || a.Max != nil {
					t.Fatalf("array argument %q: %+v, items %+v", a.Name, a, a.Items)
				}
			}
		}
	}
}

func checkFuzzErrors(t *testing.T, p *Policy, err error) {
	t.Helper()
	if p != nil {
		t.Fatalf("Parse returned a policy and an error: %v", err)
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %T is not joined errors", err)
	}
	for _, e := range j.Unwrap() {
		var pe *Error
		if !errors.As(e, &pe) || pe.File != "f.yaml" || pe.Msg == "" {
			t.Fatalf("error %q is not an *Error naming f.yaml", e)
		}
	}
}

// FuzzPinText checks that setting a pin on every tool of a policy either
// fails cleanly or gives text that loads with exactly those pins set
// (pinText checks the rest of the policy itself).
func FuzzPinText(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("f.yaml", data)
		if err != nil {
			return
		}
		for name, s := range p.Servers {
			pins := make(map[string]Pin)
			for tool := range s.Tools {
				pins[tool] = Pin{Schema: pinOf('c'), Definition: pinOf('d')}
			}
			out, changed, _, err := pinText("f.yaml", data, name, pins)
			if err != nil || len(changed) == 0 {
				continue
			}
			q, err := Parse("f.yaml", out)
			if err != nil {
				t.Fatalf("pinned text does not parse: %v", err)
			}
			for tool := range s.Tools {
				if got := q.Servers[name].Tools[tool]; got.SchemaSHA256 != pinOf('c') || got.DefinitionSHA256 != pinOf('d') {
					t.Fatalf("tool %s pinned %q, %q", tool, got.SchemaSHA256, got.DefinitionSHA256)
				}
			}
		}
	})
}
