package ledger

import (
	"testing"

	"github.com/modelgate/modelgate/money"
)

func TestShortCents(t *testing.T) {
	for pico, want := range map[int64]string{
		0: "0", -5: "0", 12 * money.PicoPerCent: "12", 12*money.PicoPerCent + money.PicoPerCent/2: "12.5",
		1234*money.PicoPerCent + 1e7: "1234.001", 1e7 - 1: "0", 3*money.PicoPerCent + 999e7 + 9: "3.999",
	} {
		if got := ShortCents(pico); got != want {
			t.Errorf("ShortCents(%d) = %q, want %q", pico, got, want)
		}
	}
}
