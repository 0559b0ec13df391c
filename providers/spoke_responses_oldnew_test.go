package providers

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"testing"
)

// The Responses path's rewrites for CPU per request (issue 35 item 6),
// each held here to the code it replaced: the answer written into one
// buffer with its message item on the stack, and tool calls paired
// without a copy when there are none (pairAll is the walk every
// conversation took before).

// volatile are the parts of a Response that differ between two runs on
// purpose: the second it completed, and call ids minted for calls the
// upstream left without one.
var volatile = regexp.MustCompile(`"completed_at":\d+|call_[A-Z2-7]{26}`)

// oldChatToResponsesUsage is chatToResponsesUsage as it was before the
// answer's items shared one buffer.
func (t *ResponsesTurn) oldChatToResponsesUsage(chat []byte) ([]byte, Usage, error) {
	var a chatAnswer
	if !readChatAnswer(chat, &a) {
		a = chatAnswer{}
		if err := json.Unmarshal(chat, &a); err != nil {
			return nil, Usage{}, err
		}
	}
	if len(a.Choices) == 0 {
		return nil, Usage{}, constError("the answer holds no choice")
	}
	t.Answered = a.Model
	c := &a.Choices[0]
	var items []*outputItem
	if r := c.Message.reasoning(); r != "" {
		it := t.newOutputItem("reasoning")
		it.summary = t.summaryWanted()
		it.text.WriteString(r)
		items = append(items, it)
	}
	if c.Message.Content != nil && *c.Message.Content != "" {
		it := t.newOutputItem("message")
		it.text.WriteString(*c.Message.Content)
		items = append(items, it)
	}
	if c.Message.Refusal != nil && *c.Message.Refusal != "" {
		it := t.newOutputItem("message")
		it.refusal = !t.RefusalAsText
		it.text.WriteString(*c.Message.Refusal)
		items = append(items, it)
	}
	for _, tc := range c.Message.ToolCalls {
		it := t.toolCallItem(tc.ID, tc.Function.Name)
		args := tc.Function.Arguments
		if it.kind == "custom_tool_call" {
			args = customInput(args)
		}
		it.text.WriteString(args)
		items = append(items, it)
	}
	output := make([]json.RawMessage, len(items))
	for i, it := range items {
		output[i] = it.appendJSON(nil, true)
	}
	return t.chatResponse(&a, output, len(chat)+t.size+1024)
}

// FuzzChatToResponsesOldNew: a chat answer becomes the same Response, the
// same usage, the same stored output and the same error as before, and a
// request the same chat messages.
func FuzzChatToResponsesOldNew(f *testing.F) {
	answers := []string{
		benchChatAnswer,
		`{"choices":[{"message":{"content":null,"refusal":"no <b>","reasoning_content":"r","tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"","function":{"name":"g","arguments":"{\"input\":\"x\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens_details":{"reasoning_tokens":2},"prompt_tokens_details":null},"service_tier":"flex"}`,
		`{"choices":[{"message":{"content":"a\u2028b","reasoning":"think","refusal":""},"finish_reason":"length"}],"model":"m2"}`,
		`{"choices":[]}`,
		`{"choices":[{"message":{"content":"x"}}], "usage": 5}`,
		`[1]`,
	}
	requests := []string{
		string(benchResponsesBody()), codexTurn, codexSearchSecondTurn, thinkingTurn,
		`{"model":"m","input":"x","reasoning":{"summary":"auto"},"tools":[{"type":"custom","name":"g"}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"role":"user","content":"q"},{"type":"function_call_output","call_id":"z","output":"o"}]}`,
	}
	for i, a := range answers {
		f.Add([]byte(requests[i%len(requests)]), []byte(a), i%2 == 0)
	}
	for i, r := range requests {
		f.Add([]byte(r), []byte(answers[i%len(answers)]), i%2 == 1)
	}
	f.Fuzz(func(t *testing.T, body, chat []byte, refusalAsText bool) {
		if got, want := pairToolCalls(fuzzMessages(chat)), pairAll(fuzzMessages(chat)); !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("paired %#v\nbefore %#v", got, want)
		}
		turn, err := ParseResponsesRequest(body)
		if err != nil {
			return
		}
		turn.RefusalAsText = refusalAsText
		old := *turn
		got, gotUsage, gotErr := turn.chatToResponsesUsage(chat)
		want, wantUsage, wantErr := old.oldChatToResponsesUsage(chat)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("error %v, before %v", gotErr, wantErr)
		}
		var gs, ws *json.SyntaxError
		if errors.As(gotErr, &gs) != errors.As(wantErr, &ws) {
			t.Fatalf("error type %T, before %T", gotErr, wantErr)
		}
		if g, w := volatile.ReplaceAll(got, nil), volatile.ReplaceAll(want, nil); string(g) != string(w) {
			t.Fatalf("Response\n%s\nbefore\n%s", got, want)
		}
		if !reflect.DeepEqual(gotUsage, wantUsage) || turn.Answered != old.Answered || turn.Status != old.Status || turn.seq != old.seq {
			t.Fatalf("usage %+v / %q %q %d, before %+v / %q %q %d", gotUsage, turn.Answered, turn.Status, turn.seq, wantUsage, old.Answered, old.Status, old.seq)
		}
		if len(turn.Output) != len(old.Output) || (turn.Output == nil) != (old.Output == nil) {
			t.Fatalf("output %d items, before %d", len(turn.Output), len(old.Output))
		}
		for i := range turn.Output {
			if g, w := volatile.ReplaceAll(turn.Output[i], nil), volatile.ReplaceAll(old.Output[i], nil); string(g) != string(w) {
				t.Fatalf("output item %d\n%s\nbefore\n%s", i, turn.Output[i], old.Output[i])
			}
		}
	})
}

// fuzzMessages reads a conversation out of fuzz bytes, one message a
// byte: a user turn, an assistant turn calling a tool, a tool's output or
// a system message, the low bits picking among three call ids.
func fuzzMessages(b []byte) []chatMessage {
	msgs := make([]chatMessage, 0, len(b))
	for _, c := range b {
		id := string(rune('a' + (c>>2)%3))
		switch c % 4 {
		case 0:
			msgs = append(msgs, chatMessage{Role: "user", Content: "q"})
		case 1:
			msgs = append(msgs, chatMessage{Role: "assistant", ToolCalls: []OpenAIToolCall{{ID: id, Type: "function"}}})
		case 2:
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: id, Content: "o"})
		default:
			msgs = append(msgs, chatMessage{Role: "system", Content: "s"})
		}
	}
	return msgs
}

// TestParamOf: the constant-cut names are the ones the concatenation wrote.
func TestParamOf(t *testing.T) {
	for i := -1; i < 25; i++ {
		if got, want := paramOf(i), "input["+strconv.Itoa(i)+"]"; got != want {
			t.Errorf("paramOf(%d) = %q, want %q", i, got, want)
		}
	}
}

// oldAssignIDs is the loop assignIDs replaced: an id string and a copy
// of the item for each item without an id.
func (t *ResponsesTurn) oldAssignIDs() {
	t.NewItems = make([]json.RawMessage, len(t.Items))
	for i, raw := range t.Items {
		if it := &t.items[i]; it.ID == "" && !it.isReference() {
			it.ID = t.newID(it.Type)
			raw = appendWithID(nil, raw, it.ID)
			t.Items[i] = raw
		}
		t.NewItems[i] = raw
	}
}

// FuzzAssignIDs: the input items get the same ids, in the same order, and
// the same rewritten bytes as before, from any sequence number; the nonce
// is made only when an item needs an id.
func FuzzAssignIDs(f *testing.F) {
	for _, body := range []string{string(benchResponsesBody()), codexTurn, codexSearchSecondTurn, thinkingTurn,
		`{"model":"m","input":[ {"type":"message","role":"user","content":"a"} , {"id":"msg_x","type":"message","role":"assistant","content":"b"},{"type":"item_reference","id":"r"},{"id":"ref"},{ },{"type":"function_call_output","call_id":"c","output":"<&>"}]}`,
	} {
		f.Add([]byte(body), uint64(0), true)
		f.Add([]byte(body), uint64(35), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, seq uint64, fixedNonce bool) {
		var got, want ResponsesTurn
		if !json.Valid(body) || !readResponsesRequest(body, &got) || !readResponsesRequest(body, &want) {
			return
		}
		got.seq, want.seq = seq, seq
		if fixedNonce {
			got.nonce, want.nonce = "abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz"
		}
		got.assignIDs()
		want.oldAssignIDs()
		if !fixedNonce {
			if (got.nonce == "") != (want.nonce == "") {
				t.Fatalf("nonce %q, before %q", got.nonce, want.nonce)
			}
			return
		}
		if got.seq != want.seq || !reflect.DeepEqual(got.items, want.items) || !reflect.DeepEqual(got.Items, want.Items) || !reflect.DeepEqual(got.NewItems, want.NewItems) {
			t.Fatalf("seq %d items %q new %q\nbefore seq %d items %q new %q", got.seq, got.Items, got.NewItems, want.seq, want.Items, want.NewItems)
		}
	})
}
