// Package jsonfast is all of the gateway's hand-written JSON, each part
// held to encoding/json by the differential tests and fuzzers beside it
// (FuzzValidJSON, TestMarshalHelpers, FuzzAppendQuoted) and by the
// translators' differential fuzzers in package providers:
//
//   - valid.go: Valid, a single-pass validator equal to json.Valid;
//   - encode.go: appenders equal to json.Marshal, byte for byte, so the
//     translators build their output in one buffer without reflection;
//   - scan.go: a scanner that finds a member's value (EachMember,
//     FindMember) and splices it (Splice) without decoding the rest, for
//     the pass-through paths and request peeking;
//   - reader.go: Reader, a single-pass reader that fills structs the way
//     json.Unmarshal does and gives up (OK turns false) wherever the two
//     could differ, so the caller falls back to json.Unmarshal;
//   - unquote.go: string decoding with encoding/json's rules (Unquote),
//     and AppendUnescaped, which keeps bytes that are not UTF-8 as they
//     are, for the secret firewall (held to encoding/json by its
//     FuzzUnescape).
//
// The per-type readers (a chat request, a Gemini request, a Responses
// request and its items, a Messages request with its content blocks, a
// chat answer) are plain functions in package providers taking a *Reader,
// beside the structs they fill: Go allows methods only in the package
// that declares the type, and this package knows nothing of the wire
// formats. The gain over reflection is measured in BENCHMARKS.md.
package jsonfast
