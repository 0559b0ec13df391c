package breaker

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestFingerprintFormats: each client format's history gives the turn
// before it: its tool, whether every result failed, and a key that is the
// same for the same call written with its arguments in another order and
// different for another result.
func TestFingerprintFormats(t *testing.T) {
	for _, tc := range []struct {
		name       string
		f          Format
		body, same string // same: the turn written differently
		other      string // another result of the same call
		tool       string
		failed     bool
	}{
		{name: "chat", f: FormatChat,
			body:  `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"make\",\"dir\":\"/w\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"Exit code: 2\nmake: *** No rule"}]}`,
			same:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[{"id":"c9","type":"function","function":{"name":"shell","arguments":"{ \"dir\": \"/w\", \"cmd\": \"make\" }"}}]},{"role":"tool","tool_call_id":"c9","content":"Exit code: 2\nmake: *** No rule"}],"model":"m"}`,
			other: `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"make\",\"dir\":\"/w\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"built"}]}`,
			tool:  "shell", failed: true},
		{name: "responses (Codex)", f: FormatResponses,
			body:  `{"model":"gpt-5-codex","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},{"type":"reasoning","summary":[]},{"type":"function_call","call_id":"a","name":"exec_command","arguments":"{\"cmd\":\"cargo test\"}"},{"type":"function_call_output","call_id":"a","output":"Exit code: 101\nWall time: 2.1 seconds\nOutput:\nerror[E0425]"}]}`,
			same:  `{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},{"type":"function_call","call_id":"b","name":"exec_command","arguments":"{\"cmd\": \"cargo test\"}"},{"type":"function_call_output","call_id":"b","output":"Exit code: 101\nWall time: 2.1 seconds\nOutput:\nerror[E0425]"}]}`,
			other: `{"model":"gpt-5-codex","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},{"type":"function_call","call_id":"a","name":"exec_command","arguments":"{\"cmd\":\"cargo test\"}"},{"type":"function_call_output","call_id":"a","output":"Exit code: 0\nok"}]}`,
			tool:  "exec_command", failed: true},
		{name: "gemini", f: FormatGemini,
			body:  `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"npm test"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"error":"Command exited with code 1"}}}]}]}`,
			same:  `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"args":{"command":"npm test"},"name":"run_shell_command"}}]},{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"error":"Command exited with code 1"}}}]}]}`,
			other: `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"npm test"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"12 passing"}}}]}]}`,
			tool:  "run_shell_command", failed: true},
		{name: "converse", f: FormatConverse,
			body:  `{"messages":[{"role":"user","content":[{"text":"go"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"shell","input":{"cmd":"make","dir":"/w"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"Exit code: 2\nmake: *** No rule"}],"status":"error"}}]}]}`,
			same:  `{"messages":[{"role":"user","content":[{"text":"go"}]},{"role":"assistant","content":[{"toolUse":{"name":"shell","toolUseId":"t9","input":{"dir":"/w","cmd":"make"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t9","status":"error","content":[{"text":"Exit code: 2\nmake: *** No rule"}]}}]}]}`,
			other: `{"messages":[{"role":"user","content":[{"text":"go"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"shell","input":{"cmd":"make","dir":"/w"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"built"}],"status":"success"}}]}]}`,
			tool:  "shell", failed: true},
		{name: "messages", f: FormatMessages,
			body:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/a","old_string":"1","new_string":"2"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"<tool_use_error>String to replace not found</tool_use_error>"}],"is_error":true}]}]}`,
			same:  `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t7","name":"Edit","input":{"new_string":"2","old_string":"1","file_path":"/a"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t7","content":[{"type":"text","text":"<tool_use_error>String to replace not found</tool_use_error>"}],"is_error":true,"cache_control":{"type":"ephemeral"}}]}]}`,
			other: `{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/a","old_string":"1","new_string":"2"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"updated"}]}]}`,
			tool:  "Edit", failed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fingerprint(tc.f, []byte(tc.body))
			if !p.calls || p.tool != tc.tool || (p.fail != 0) != tc.failed || p.key == 0 {
				t.Fatalf("print = %+v, want tool %q failed %v", p, tc.tool, tc.failed)
			}
			if tc.name != "messages" {
				// The Messages case's "same" moves cache_control, which
				// is part of the result's bytes.
				if s := fingerprint(tc.f, []byte(tc.same)); s.key != p.key || s.fail != p.fail {
					t.Errorf("the same turn written otherwise: key %x fail %x, want %x %x", s.key, s.fail, p.key, p.fail)
				}
			}
			if o := fingerprint(tc.f, []byte(tc.other)); o.key == p.key || o.fail != 0 {
				t.Errorf("another result: key %x fail %x, want another key and no failure", o.key, o.fail)
			}
		})
	}
}

// TestFailedResultsWithoutNoise: Codex's chunk id and wall time and Gemini CLI's
// process group differ on every run of the same failing command; the
// result is the same failure.
func TestFailedResultsWithoutNoise(t *testing.T) {
	codex := func(chunk, wall string) uint64 {
		return fingerprint(FormatResponses, []byte(`{"input":[{"type":"message","role":"user","content":"go"},{"type":"function_call","call_id":"a","name":"exec_command","arguments":"{\"cmd\":\"make\"}"},`+
			`{"type":"function_call_output","call_id":"a","output":"Chunk ID: `+chunk+`\nWall time: `+wall+` seconds\nProcess exited with code 2\nOriginal token count: 21\nOutput:\nmake: *** No rule"}]}`)).key
	}
	if codex("745a16", "0.0123") != codex("135d1b", "0.0456") {
		t.Error("Codex's wall time made two runs of one failure differ")
	}
	gemini := func(pgid string) uint64 {
		return fingerprint(FormatGemini, []byte(`{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"make"}}}]},`+
			`{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"Command: make\nStdout: (empty)\nError: (none)\nExit Code: 2\nProcess Group PGID: `+pgid+`"}}}]}]}`)).key
	}
	if gemini("4711") != gemini("4799") {
		t.Error("Gemini CLI's process group made two runs of one failure differ")
	}
}

func TestFingerprintFirstTurnAndJunk(t *testing.T) {
	for _, body := range []string{
		`{"messages":[{"role":"user","content":"hello"}]}`,
		`{"messages":[]}`,
		`{"model":"m"}`,
		`not json`,
		`{"messages":[{"role":"user","content":"x"}`,
		`{"messages":"text"}`,
		`[1,2]`,
	} {
		if p := fingerprint(FormatMessages, []byte(body)); p.key != 0 || p.calls {
			t.Errorf("%s: print %+v, want nothing to compare", body, p)
		}
	}
}

func TestExitCode(t *testing.T) {
	for text, want := range map[string]int{
		"Exit code 2\nls: cannot access":              2,
		"Exit code: 0\nWall time":                     0,
		`{"output":"x","metadata":{"exit_code":127}}`: 127,
		"Process exited with code 1":                  1,
	} {
		if got, ok := exitCode(text); !ok || got != want {
			t.Errorf("%q: %d %v, want %d", text, got, ok, want)
		}
	}
	if _, ok := exitCode("all 12 tests passed"); ok {
		t.Error("found an exit code in plain output")
	}
}

// FuzzTailOf holds the skipping scan to encoding/json: on any valid JSON
// object whose member is an array, the entries it finds are the array's
// last entries, byte for byte; on anything else it does not panic.
func FuzzTailOf(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"a\"]}"},1,"x",[2,{"y":null}]],"model":"m"}`))
	f.Add([]byte(`{"a":{"messages":[1]},"messages":[true , false,  null ]}`))
	f.Add([]byte(`{"messages":[]}`))
	f.Add([]byte(`{"messages":[1],"messages":[2,3]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		tl, ok := tailOf(body, "messages")
		var obj map[string]json.RawMessage
		if json.Unmarshal(body, &obj) != nil {
			return
		}
		var arr []json.RawMessage
		isArr := json.Unmarshal(obj["messages"], &arr) == nil && len(bytes.TrimSpace(obj["messages"])) > 0 && bytes.TrimSpace(obj["messages"])[0] == '['
		if !isArr {
			return
		}
		if !ok {
			t.Fatalf("valid object with an array: not found")
		}
		want := arr[max(0, len(arr)-maxTail):]
		if tl.n != len(want) {
			t.Fatalf("%d entries, want %d", tl.n, len(want))
		}
		for i, w := range want {
			got := body[tl.spans[i].start:tl.spans[i].end]
			if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(w)) {
				t.Fatalf("entry %d = %s, want %s", i, got, w)
			}
		}
	})
}

// FuzzFingerprintAndNudge: no body makes the fingerprint or the nudge
// panic, and a nudge of a valid body is valid JSON with the note in it.
func FuzzFingerprintAndNudge(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x","is_error":true}]}]}`,
		`{"messages":[{"role":"user","content":"go"}]}`,
		`{"input":[{"type":"function_call","name":"x","arguments":"{}"},{"type":"function_call_output","output":"Exit code: 1"}]}`,
		`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"a","args":{}}}]}]}`,
		`{"messages":[{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"a","input":{}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t","content":[{"text":"Exit code: 1"}],"status":"error"}}]}]}`,
	} {
		for fm := range 6 {
			f.Add([]byte(s), uint8(fm))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, fm uint8) {
		format := Format(fm % 6)
		fingerprint(format, body)
		out, err := nudged(format, body, "note \"quoted\" <b>")
		if err != nil || !json.Valid(body) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("nudged %s into invalid JSON %s", body, out)
		}
		if !strings.Contains(string(out), `note \"quoted\" \u003cb\u003e`) && !strings.Contains(string(out), `note \"quoted\" <b>`) {
			t.Fatalf("nudged body lacks the note: %s", out)
		}
	})
}
