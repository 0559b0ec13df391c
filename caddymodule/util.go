package caddymodule

import (
	"fmt"
	"strconv"
)

func parsePositiveInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive whole number, got %q", s)
	}
	return n, nil
}
