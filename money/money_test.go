package money

import "testing"

func TestParseDollars(t *testing.T) {
	for in, want := range map[string]int64{"50": 5000, "2.5": 250, "$0.05": 5, "0": 0, "1000000": MaxBudgetCents, "1.230": 123, ".5": 50, "007": 700} {
		if got, err := ParseDollars(in); err != nil || got != want {
			t.Errorf("ParseDollars(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "$", "NaN", "Inf", "+Inf", "-1", "1e3", "0.001", "2.505", "1000000.01", "10000000", "92233720368547758", "1,000", " 5"} {
		if got, err := ParseDollars(in); err == nil {
			t.Errorf("ParseDollars(%q) = %d, want an error", in, got)
		}
	}
	for in, want := range map[string]int64{"0": 0, "5000": 5000, "100000000": MaxBudgetCents, "000000000000001": 1} {
		if got, err := ParseCents(in); err != nil || got != want {
			t.Errorf("ParseCents(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "0.5", "100000001", "1000000000", "92233720368547758070", "NaN", "1e3"} {
		if got, err := ParseCents(in); err == nil {
			t.Errorf("ParseCents(%q) = %d, want an error", in, got)
		}
	}
}

// FuzzParseDollars: whatever the text, an accepted amount is inside the
// bound, so cents × 10^10 never overflows, and it reads back from Dollars.
func FuzzParseDollars(f *testing.F) {
	for _, s := range []string{"50", "2.50", "$0.05", "NaN", "1e9", "0.001", "99999999999999999999", ".", "1000000.00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseDollars(s); err == nil {
			if n < 0 || n > MaxBudgetCents {
				t.Fatalf("ParseDollars(%q) = %d", s, n)
			}
			// What an admin reads back is what they wrote.
			if back, err := ParseDollars(Dollars(n)); err != nil || back != n {
				t.Fatalf("ParseDollars(Dollars(%d)) = %d, %v", n, back, err)
			}
		}
		if n, err := ParseCents(s); err == nil && (n < 0 || n > MaxBudgetCents) {
			t.Fatalf("ParseCents(%q) = %d", s, n)
		}
	})
}

func TestDollars(t *testing.T) {
	for cents, want := range map[int64]string{0: "$0.00", 5: "$0.05", 250: "$2.50", 123456: "$1234.56", MaxBudgetCents: "$1000000.00",
		-5: "-$0.05", -150: "-$1.50", -9223372036854775808: "-$92233720368547758.08"} {
		if got := Dollars(cents); got != want {
			t.Errorf("Dollars(%d) = %q, want %q", cents, got, want)
		}
	}
}

func TestParsePerMillion(t *testing.T) {
	for _, c := range []struct {
		in   string
		unit int
		want int64
		ok   bool
	}{
		{"0.15", DollarsPerMillion, 150_000, true},
		{"$3", DollarsPerMillion, 3_000_000, true},
		{"15", CentsPerMillion, 150_000, true},
		{"7.5", CentsPerMillion, 75_000, true},
		// "$15" in cents would be read 100 times under what it says.
		{"$15", CentsPerMillion, 0, false},
		{"0.0000001", DollarsPerMillion, 0, false},
		{"1000", DollarsPerMillion, MaxPricePico, true},
		{"1000.01", DollarsPerMillion, 0, false},
		{"-1", DollarsPerMillion, 0, false},
		{"1e3", CentsPerMillion, 0, false},
		{"", CentsPerMillion, 0, false},
	} {
		got, err := ParsePerMillion(c.in, c.unit)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParsePerMillion(%q, %d) = %d, %v", c.in, c.unit, got, err)
		}
	}
	if s := PerMillion(150_000); s != "$0.15" {
		t.Errorf("PerMillion(150000) = %q", s)
	}
	if s := FormatPerMillion(75_000, CentsPerMillion); s != "7.5" {
		t.Errorf("FormatPerMillion(75000, cents) = %q", s)
	}
}

// FuzzParsePerMillion: an accepted price is inside the bound and reads
// back from FormatPerMillion.
func FuzzParsePerMillion(f *testing.F) {
	for _, s := range []string{"0.15", "3", "$1000", "7.5", "0.000001", "1e3", "99999999999", "."} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, dollars bool) {
		unit := CentsPerMillion
		if dollars {
			unit = DollarsPerMillion
		}
		n, err := ParsePerMillion(s, unit)
		if err != nil {
			return
		}
		if n < 0 || n > MaxPricePico {
			t.Fatalf("ParsePerMillion(%q) = %d", s, n)
		}
		if back, err := ParsePerMillion(FormatPerMillion(n, unit), unit); err != nil || back != n {
			t.Fatalf("ParsePerMillion(FormatPerMillion(%d, %d)) = %d, %v", n, unit, back, err)
		}
	})
}
