package batch

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
)

// Upload is a decoded POST /v1/files form.
type Upload struct {
	Purpose, Filename string
	Content           []byte
	// ExpiresAfter is expires_after[seconds]; 0 when not given.
	ExpiresAfter time.Duration
}

// DecodeUpload reads a multipart/form-data upload (the form fields
// purpose, file and OpenAI's expires_after[anchor] and
// expires_after[seconds]); the file at most limit bytes.
func DecodeUpload(body io.Reader, contentType string, limit int64) (Upload, *apierror.Error) {
	var up Upload
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return up, invalid("file", "send the file as multipart/form-data with the fields purpose and file")
	}
	mr := multipart.NewReader(body, params["boundary"])
	seenFile := false
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return up, invalid("file", "the multipart body is malformed: "+jsonProblem(err))
		}
		name := part.FormName()
		if name == "file" {
			if seenFile {
				return up, invalid("file", "give one file per upload")
			}
			seenFile = true
			up.Filename = part.FileName()
			b, err := io.ReadAll(io.LimitReader(part, limit+1))
			if err != nil {
				return up, invalid("file", "reading the file failed: "+jsonProblem(err))
			}
			if int64(len(b)) > limit {
				return up, tooLarge(limit)
			}
			up.Content = b
			continue
		}
		// Every other field is short text.
		b, err := io.ReadAll(io.LimitReader(part, 257))
		if err != nil || len(b) > 256 {
			return up, invalid(name, "want a short text value")
		}
		v := string(b)
		switch name {
		case "purpose":
			up.Purpose = v
		case "expires_after[seconds]":
			n, err := strconv.ParseInt(v, 10, 64)
			// OpenAI's bounds: one hour to 30 days.
			if err != nil || n < 3600 || n > 2592000 {
				return up, invalid(name, "want whole seconds from 3600 to 2592000")
			}
			up.ExpiresAfter = time.Duration(n) * time.Second
		case "expires_after[anchor]":
			if v != "created_at" {
				return up, invalid(name, `want "created_at"`)
			}
		}
	}
	switch {
	case !seenFile:
		return up, invalid("file", "missing; send the JSONL file in the form field file")
	case up.Purpose != "batch":
		return up, invalid("purpose", "this gateway keeps files for batches only; want purpose \"batch\"")
	case !utf8.Valid(up.Content) || bytes.IndexByte(up.Content, 0) >= 0:
		return up, invalid("file", "a batch input file is JSON Lines, UTF-8 text without NUL bytes; this one is not")
	}
	up.Filename = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(up.Filename, "?"))
	if up.Filename == "" {
		up.Filename = "upload.jsonl"
	}
	if len(up.Filename) > 255 {
		// Cut on a rune's start, so the name stays valid UTF-8.
		cut := 255
		for cut > 0 && !utf8.RuneStart(up.Filename[cut]) {
			cut--
		}
		up.Filename = up.Filename[:cut]
	}
	return up, nil
}

// fileRoutes are /v1/files[/{id}[/content]].
func (s *Service) fileRoutes() routes {
	return routes{family: apierror.OpenAI,
		collection: map[string]http.HandlerFunc{http.MethodPost: s.uploadFile, http.MethodGet: s.listFiles},
		item:       map[string]idHandler{http.MethodGet: s.getFile, http.MethodDelete: s.deleteFile},
		actions:    map[string]map[string]idHandler{"content": {http.MethodGet: s.fileContent}}}
}

func (s *Service) uploadFile(w http.ResponseWriter, r *http.Request) {
	const f = apierror.OpenAI
	st, e := s.store()
	if e != nil {
		e.Write(w, f)
		return
	}
	// The form around the file is small; the file itself is bounded by
	// DecodeUpload, the whole body here.
	h := s.newHold(r.Context())
	defer h.release()
	body := http.MaxBytesReader(w, h.body(r), s.o.MaxBytes+64<<10)
	up, e := DecodeUpload(body, r.Header.Get("Content-Type"), s.o.MaxBytes)
	if h.refused != nil {
		e = h.refused
	}
	if e != nil {
		// The body's bound (MaxBytesReader) reaches DecodeUpload as a read
		// error of the part it cut.
		if strings.Contains(e.Message, "request body too large") {
			e = tooLarge(s.o.MaxBytes)
		}
		e.Write(w, f)
		return
	}
	ident, key := s.ownerOf(r)
	if up.Content, e = s.screenUpload(ident, up.Content); e != nil {
		e.Write(w, f)
		return
	}
	now := s.o.Now().UTC()
	keep := s.o.Retention
	if up.ExpiresAfter > 0 {
		keep = min(keep, up.ExpiresAfter)
	}
	file := ledger.BatchFile{ID: "file-" + randomID(12), Site: key.Site, KeyID: key.KeyID, Purpose: up.Purpose, Filename: up.Filename,
		Bytes: int64(len(up.Content)), Created: now, Expires: now.Add(keep), Content: up.Content}
	if err := st.PutBatchFile(r.Context(), file); err != nil {
		storeError(err, "file", file.ID).Write(w, f)
		return
	}
	writeJSON(w, http.StatusOK, fileJSON(file))
}

// openAIFile is a file the Files API shows: Anthropic's results are kept
// beside them, not among them.
func (s *Service) openAIFile(r *http.Request, id string) (ledger.BatchFile, ledger.BatchStore, *apierror.Error) {
	st, e := s.store()
	if e != nil {
		return ledger.BatchFile{}, nil, e
	}
	_, key := s.ownerOf(r)
	file, err := st.GetBatchFile(r.Context(), key, id)
	if err == nil && file.Purpose == purposeResults {
		err = ledger.ErrBatchFileNotFound
	}
	if err != nil {
		return file, nil, storeError(err, "file", id)
	}
	return file, st, nil
}

func (s *Service) getFile(w http.ResponseWriter, r *http.Request, id string) {
	file, _, e := s.openAIFile(r, id)
	if e != nil {
		e.Write(w, apierror.OpenAI)
		return
	}
	writeJSON(w, http.StatusOK, fileJSON(file))
}

func (s *Service) deleteFile(w http.ResponseWriter, r *http.Request, id string) {
	file, st, e := s.openAIFile(r, id)
	if e == nil {
		if err := st.DeleteBatchFile(r.Context(), file.Owner(), id); err != nil {
			e = storeError(err, "file", id)
		}
	}
	if e != nil {
		e.Write(w, apierror.OpenAI)
		return
	}
	out, _ := json.Marshal(map[string]any{"id": id, "object": "file", "deleted": true})
	writeJSON(w, http.StatusOK, out)
}

func (s *Service) fileContent(w http.ResponseWriter, r *http.Request, id string) {
	meta, st, e := s.openAIFile(r, id)
	if e != nil {
		e.Write(w, apierror.OpenAI)
		return
	}
	s.sendFile(w, r, st, meta, "application/octet-stream", apierror.OpenAI, storeError(ledger.ErrBatchFileNotFound, "file", id))
}

func (s *Service) listFiles(w http.ResponseWriter, r *http.Request) {
	const f = apierror.OpenAI
	st, key, limit, ok := s.listing(w, r, f, 10000, 10000)
	if !ok {
		return
	}
	q := r.URL.Query()
	purpose := q.Get("purpose")
	if purpose == purposeResults {
		purpose = "none"
	}
	page, err := st.ListBatchFiles(r.Context(), key, purpose, q.Get("after"), limit+1)
	if err != nil {
		storeError(err, "file", "").Write(w, f)
		return
	}
	more := len(page) > limit
	if more {
		page = page[:limit]
	}
	data := make([]json.RawMessage, 0, len(page))
	for _, file := range page {
		if file.Purpose != purposeResults {
			data = append(data, fileJSON(file))
		}
	}
	writeJSON(w, http.StatusOK, openAIList(data, more))
}

// openAIList is OpenAI's cursor page.
func openAIList(data []json.RawMessage, more bool) []byte {
	out := map[string]any{"object": "list", "data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(data) > 0 {
		var first, last struct{ ID string }
		_ = json.Unmarshal(data[0], &first)
		_ = json.Unmarshal(data[len(data)-1], &last)
		out["first_id"], out["last_id"] = first.ID, last.ID
	}
	b, _ := json.Marshal(out)
	return b
}

func fileJSON(f ledger.BatchFile) json.RawMessage {
	out, _ := json.Marshal(map[string]any{"id": f.ID, "object": "file", "bytes": f.Bytes, "created_at": f.Created.Unix(),
		"expires_at": f.Expires.Unix(), "filename": f.Filename, "purpose": f.Purpose, "status": "processed"})
	return out
}
