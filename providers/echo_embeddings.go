package providers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strconv"
)

// echoEmbedDimensions is the echo backend's vector size unless the
// request asks for another.
const echoEmbedDimensions = 256

// echoMaxDimensions is the largest vector echo makes: as real models,
// it refuses a size it cannot give rather than give another.
const echoMaxDimensions = 4096

// echoEmbeddings answers an OpenAI embeddings request with deterministic
// unit vectors: the same text always gets the same vector (a hash of the
// text seeds them), different texts almost surely different ones, so
// pipelines can be tested offline. Usage is estimated as for chat.
func echoEmbeddings(req *http.Request, body []byte) *http.Response {
	info, err := ParseEmbeddingsRequest(body)
	if err != nil {
		return echoError(req, asAPIErr(err))
	}
	t := info.embed()
	t.Alias = info.Model
	if t.Texts == nil {
		return echoError(req, BadRequest("input", "the echo backend embeds text, not token ids"))
	}
	dims := int64(echoEmbedDimensions)
	if t.Dimensions != nil {
		if *t.Dimensions > echoMaxDimensions {
			return echoError(req, BadRequest("dimensions", fmt.Sprintf("dimensions must be at most %d (the echo backend's largest vector); got %d", echoMaxDimensions, *t.Dimensions)))
		}
		dims = *t.Dimensions
	}
	vectors := make([][]float64, len(t.Texts))
	for i, text := range t.Texts {
		vectors[i] = echoVector(text, int(dims))
	}
	out := t.answer(vectors, t.estimateTokens())
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(out)))
	return echoResponse(req, http.StatusOK, hdr, io.NopCloser(bytes.NewReader(out)), int64(len(out)))
}

// echoVector is a unit vector drawn from a generator seeded by text.
func echoVector(text string, dims int) []float64 {
	h := fnv.New64a()
	h.Write([]byte(text))
	state := h.Sum64() | 1
	v := make([]float64, dims)
	var norm float64
	var buf [8]byte
	for i := range v {
		// xorshift64*: cheap, deterministic, spread enough for tests.
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		binary.LittleEndian.PutUint64(buf[:], state*2685821657736338717)
		x := float64(binary.LittleEndian.Uint32(buf[:4]))/math.MaxUint32*2 - 1
		v[i] = x
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float64(float32(v[i] / norm))
	}
	return v
}

func asAPIErr(err error) *APIError {
	if e, ok := err.(*APIError); ok {
		return e
	}
	return BadRequest("", err.Error())
}
