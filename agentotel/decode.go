// Package agentotel receives coding agents' own OpenTelemetry export
// (OTLP/HTTP logs and metrics, JSON or protobuf) and turns Claude Code's
// per-request events into ledger records marked as reported by the agent,
// so seats that reach their provider without the gateway (subscriptions)
// still appear in the usage and session reports.
package agentotel

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Encoding is how an OTLP/HTTP body is serialized.
type Encoding int

// The two encodings OTLP/HTTP defines.
const (
	Protobuf Encoding = iota // application/x-protobuf
	JSON                     // application/json
)

// ErrContentType is returned for a body that is neither of OTLP/HTTP's
// media types; the caller answers 415.
var ErrContentType = errors.New("Content-Type must be application/x-protobuf or application/json")

// EncodingOf maps a Content-Type header to its encoding.
func EncodingOf(contentType string) (Encoding, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return 0, ErrContentType
	}
	switch strings.ToLower(mt) {
	case "application/x-protobuf", "application/protobuf":
		return Protobuf, nil
	case "application/json":
		return JSON, nil
	}
	return 0, ErrContentType
}

// ReadBody reads an export body of at most limit bytes after decoding,
// gunzipping it when contentEncoding says gzip (OTLP exporters' only
// compression). It returns errTooLarge past the limit.
func ReadBody(r io.Reader, contentEncoding string, limit int64) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(contentEncoding)) {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("unsupported Content-Encoding %q: send gzip or none", contentEncoding)
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, ErrTooLarge
	}
	return b, nil
}

// ErrTooLarge is returned for a body over the receiver's limit (413).
var ErrTooLarge = errors.New("body exceeds the limit")

// OTLP/JSON writes traceId and spanId as hex, where protojson expects
// base64; Claude Code's events carry none, and a record's ids are not used
// here, so unknown fields are discarded and ids are dropped before decoding.
var jsonOpts = protojson.UnmarshalOptions{DiscardUnknown: true}

// DecodeLogs decodes an ExportLogsServiceRequest.
func DecodeLogs(b []byte, enc Encoding) (*collogs.ExportLogsServiceRequest, error) {
	req := &collogs.ExportLogsServiceRequest{}
	if err := unmarshal(b, enc, req); err != nil {
		return nil, err
	}
	return req, nil
}

// DecodeMetrics decodes an ExportMetricsServiceRequest.
func DecodeMetrics(b []byte, enc Encoding) (*colmetrics.ExportMetricsServiceRequest, error) {
	req := &colmetrics.ExportMetricsServiceRequest{}
	if err := unmarshal(b, enc, req); err != nil {
		return nil, err
	}
	return req, nil
}

func unmarshal(b []byte, enc Encoding, m proto.Message) error {
	if enc == JSON {
		if err := jsonOpts.Unmarshal(stripIDs(b), m); err != nil {
			return fmt.Errorf("OTLP/JSON body: %w", err)
		}
		return nil
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("OTLP protobuf body: %w", err)
	}
	return nil
}

// stripIDs blanks the values of "traceId" and "spanId" members, which
// OTLP/JSON encodes as hex and protojson would read as base64. Only the
// exact quoted member names are touched; a string value that merely
// contains them is left alone because a member name is followed by a colon.
func stripIDs(b []byte) []byte {
	if !bytes.Contains(b, []byte(`"traceId"`)) && !bytes.Contains(b, []byte(`"spanId"`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if b[i] == '"' {
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(b) {
				return append(out, b[i:]...)
			}
			name := string(b[i+1 : j])
			out = append(out, b[i:j+1]...)
			i = j + 1
			if name != "traceId" && name != "spanId" {
				continue
			}
			k := i
			for k < len(b) && (b[k] == ' ' || b[k] == '\t' || b[k] == '\n' || b[k] == '\r') {
				k++
			}
			if k >= len(b) || b[k] != ':' {
				continue
			}
			k++
			for k < len(b) && (b[k] == ' ' || b[k] == '\t' || b[k] == '\n' || b[k] == '\r') {
				k++
			}
			if k < len(b) && b[k] == '"' {
				e := k + 1
				for e < len(b) && b[e] != '"' {
					if b[e] == '\\' {
						e++
					}
					e++
				}
				if e < len(b) {
					out = append(out, b[i:k]...)
					out = append(out, '"', '"')
					i = e + 1
				}
			}
			continue
		}
		out = append(out, b[i])
		i++
	}
	return out
}
