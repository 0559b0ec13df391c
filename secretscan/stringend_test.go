package secretscan

import (
	"strings"
	"testing"
)

// stringEndBytes is stringEnd a byte at a time, as it was written first
// (the cases reordered, being disjoint): the reference the eight-byte
// walk is held to.
func stringEndBytes(src []byte, pos int) (int, bool, error) {
	escaped, i := false, pos+1
	for i < len(src) {
		c := src[i]
		if c < 0x20 {
			return 0, false, errSyntax
		}
		if c == '"' {
			return i + 1, escaped, nil
		}
		if c == '\\' {
			escaped, i = true, i+2
			continue
		}
		i++
	}
	return 0, false, errSyntax
}

func FuzzStringEnd(f *testing.F) {
	long := strings.Repeat("plain text é ", 20)
	for _, s := range []string{`""`, `"a"`, `"` + long + `"`, `"` + long + `\"` + long + `" tail`, `"` + long, `"` + long + "\x1f" + `"`,
		`"12345678\\"`, `"1234567\"`, `"\u00e9 and more than eight"`, "\"\x7f\x80\xff\"", `"abc\`, `"` + long + `\\` + `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) == 0 || src[0] != '"' {
			src = append([]byte{'"'}, src...)
		}
		end, esc, err := stringEnd(src, 0)
		wantEnd, wantEsc, wantErr := stringEndBytes(src, 0)
		if end != wantEnd || esc != wantEsc || err != wantErr {
			t.Fatalf("%q: got %d %v %v, want %d %v %v", src, end, esc, err, wantEnd, wantEsc, wantErr)
		}
	})
}

// TestSpecial8 checks the eight-byte test on every byte value in every
// position.
func TestSpecial8(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			var x uint64
			for i := 7; i >= 0; i-- {
				x = x<<8 | uint64(b[i])
			}
			want := c == '"' || c == '\\' || c < 0x20
			if got := special8(x); got != want {
				t.Fatalf("byte %#x at %d: got %v", c, pos, got)
			}
		}
	}
}
