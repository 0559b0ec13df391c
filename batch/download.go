package batch

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
)

// sendFile sends the content of file meta (its size known) as
// contentType, counted against the body memory: piece by piece when the
// store reads in pieces (a piece's copies held, however large the file),
// else whole (twice its size). missing is the refusal of a file gone
// meanwhile.
func (s *Service) sendFile(w http.ResponseWriter, r *http.Request, st ledger.BatchStore, meta ledger.BatchFile, contentType string, f apierror.Family, missing *apierror.Error) {
	h := s.newHold(r.Context())
	defer h.release()
	fs, pieces := st.(ledger.BatchFileStreamer)
	need := meta.Bytes
	if pieces {
		need = min(need, 4*streamChunk)
	}
	if e := h.take(downloadCopies * need); e != nil {
		e.Write(w, f)
		return
	}
	started := false
	start := func() {
		started = true
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.FormatInt(meta.Bytes, 10))
		w.WriteHeader(http.StatusOK)
	}
	var err error
	if pieces {
		sent := int64(0)
		err = fs.BatchFileChunks(r.Context(), meta.Owner(), meta.ID, streamChunk, func(b []byte) error {
			if !started {
				start()
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
			if sent += int64(len(b)); sent >= meta.Bytes {
				// All of it: no read for the empty piece after.
				return errSent
			}
			return nil
		})
		if err == errSent {
			err = nil
		}
	} else {
		var file ledger.BatchFile
		if file, err = st.BatchFileContent(r.Context(), meta.Owner(), meta.ID); err == nil {
			start()
			_, _ = w.Write(file.Content)
		}
	}
	switch {
	case err == nil && !started:
		start() // an empty file
	case err != nil && !started:
		missing.Write(w, f)
	}
	// An error after the first piece leaves the body short of its
	// Content-Length, which the client sees as a cut transfer.
}

// errSent stops a read in pieces once the file's size was sent.
var errSent = errors.New("sent")
