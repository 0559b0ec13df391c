// Package jsonfast is the gateway's hand-written JSON: a validator held to
// json.Valid and appenders held to json.Marshal, byte for byte, by the
// differential tests and fuzzers beside them (FuzzValidJSON,
// TestMarshalHelpers) and by the translators' differential fuzzers in
// package providers. The translators build their output in one buffer
// with these instead of reflection; the gain is measured in BENCHMARKS.md.
//
// The per-type readers (the scanner and fastReader in package providers)
// stay beside the types they fill.
package jsonfast
