package anchortest_test

import (
	"testing"

	"github.com/bankdoor/bankdoor/anchor"
	"github.com/bankdoor/bankdoor/anchor/anchortest"
)

func TestMemStore(t *testing.T) {
	anchortest.TestCosignatureStore(t, func(*testing.T) anchor.CosignatureStore { return anchortest.NewMemStore() })
}
