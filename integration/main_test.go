package integration

import (
	"testing"

	"github.com/modelgate/modelgate/internal/testbin"
)

// TestMain removes the binary the tests built (testbin.Main).
func TestMain(m *testing.M) { testbin.Main(m) }
