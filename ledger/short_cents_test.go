package ledger

import "testing"

func TestShortCents(t *testing.T) {
	for pico, want := range map[int64]string{
		0: "0", -5: "0", 12 * picoPerCent: "12", 12*picoPerCent + picoPerCent/2: "12.5",
		1234*picoPerCent + 1e7: "1234.001", 1e7 - 1: "0", 3*picoPerCent + 999e7 + 9: "3.999",
	} {
		if got := ShortCents(pico); got != want {
			t.Errorf("ShortCents(%d) = %q, want %q", pico, got, want)
		}
	}
}
