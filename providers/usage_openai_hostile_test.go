package providers

import (
	"strings"
	"testing"
)

// TestOpenAIUsageAdversarial: inputs a byte fuzzer rarely builds,
// read by the fast path exactly as encoding/json reads them.
func TestOpenAIUsageAdversarial(t *testing.T) {
	deep := strings.Repeat("[", 600) + strings.Repeat("]", 600)
	for _, body := range []string{
		"{\"usage\":{\"prompt_to\u212aens\":5,\"completion_tokens\":2}}", // Kelvin sign folds to k
		"{\"usage\":{\"prompt_tokens\":5,\"completion_tokenſ\":2}}",      // long s folds to s
		`{"usage":{"prompt_to\u212aens":5}}`,                             // the same, escaped
		`{"usage":{"prompt_tokens":5,"PROMPT_TOKENS":7}}`,                // folded duplicate, last wins
		`{"usage":{"prompt_tokens":5,"prompt_tokens":7}}`,                // exact duplicate
		`{"usage":{"prompt_tokens\u0000":5}}`,                            // escaped NUL: no match
		`{"usage":{"prompt_tokens\/":5}}`,                                // escaped slash
		`{"usage":{"\u0070rompt_tokens":5}}`,                             // escaped p
		`{"usage":{"prompt_tokens":-0,"completion_tokens":-1}}`,          // -0, negatives
		`{"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":-9223372036854775808}}`,
		`{"usage":{"prompt_tokens":9223372036854775808}}`,                    // one past int64
		`{"usage":{"prompt_tokens":1E2}}`, `{"usage":{"prompt_tokens":1.0}}`, // not integers
		"{\"usage\":{ \"prompt_tokens\" :\t5 ,\r\n\"completion_tokens\" : 3 } }", // whitespace everywhere
		`{"usage":{"prompt_tokens_details":{"cached_tokens":4},"prompt_tokens_details":{"cached_tokens":null},"prompt_tokens":10}}`,
		`{"usage":{"prompt_tokens_details":null,"prompt_tokens_details":{"cache_write_tokens":3},"prompt_tokens":10}}`,
		`{"usage":{"prompt_tokens_details":{"cached_tokens":4,"Cached_Tokens":6},"prompt_tokens":10}}`,
		`{"usage":{"prompt_tokens_details":{"cached_tokens":4,"cached_tokens":"x"},"prompt_tokens":10}}`,
		`{"usage":{"prompt_tokens_details":{},"prompt_tokens":10}}`,
		`{"usage":{"prompt_tokens_details":[],"prompt_tokens":10}}`,
		`{"usage":{"prompt_tokens_details":"","prompt_tokens":10}}`,
		`{"usage":{"prompt_tokens":10,"completion_tokens_details":null}}`,
		`{"usage":{"prompt_tokens":10,"completion_tokens_details":"anything"}}`,
		`{"usage":{"prompt_tokens":10,"total_tokens":null}}`,
		`{"usage":{"prompt_tokens":10,"total_tokens":true}}`,
		"{\"usage\":{\"prompt_tokens\":10,\"x\":\"\xff\xfe\"}}", // invalid UTF-8 in a value
		"{\"usage\":{\"prompt_tokens\":10,\"\xff\":1}}",         // invalid UTF-8 in a key
		`{"usage":{"prompt_tokens":10,"x":` + deep + `}}`,       // deeper than jsonfast.Valid tracks itself
		`{"usage":{"prompt_tokens":10,"completion_tokens_details":` + deep + `}}`,
		`{"usage":{"prompt_tokens":10,"x":1}} trailing`,
	} {
		got, want := OpenAIUsageFromBody([]byte(body)), openAIUsageByUnmarshal([]byte(body))
		if got != want {
			b := body
			if len(b) > 120 {
				b = b[:120] + "…"
			}
			t.Errorf("body %q:\n fast          %+v\n encoding/json %+v", b, got, want)
		}
	}
}
