package handlers

import (
	"bytes"
	"net/http"

	"github.com/modelgate/modelgate/apierror"
)

// bufferSink keeps a whole answer for the adapter that asked for it:
// compact reads the summary out of it, Bedrock's CountTokens the count.
type bufferSink struct {
	header http.Header
	status int
	body   bytes.Buffer
	// failed is the error the call was answered with instead, kept to be
	// rendered in the asking adapter's own family.
	failed *apierror.Error
}

func newBufferSink() *bufferSink { return &bufferSink{header: http.Header{}} }

func (b *bufferSink) Header() http.Header { return b.header }

func (b *bufferSink) Start(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferSink) Write(p []byte) error {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	b.body.Write(p)
	return nil
}

func (b *bufferSink) Flush() error { return nil }

func (b *bufferSink) Fail(e *apierror.Error) {
	if b.status == 0 {
		b.status, b.failed = e.Status, e
	}
}

// replay answers out with what was kept: its header, then the error or
// the answer.
func (b *bufferSink) replay(out Sink) {
	h := out.Header()
	for k, v := range b.header {
		h[k] = v
	}
	if b.failed != nil {
		out.Fail(b.failed)
		return
	}
	out.Start(b.status)
	_ = out.Write(b.body.Bytes())
}
