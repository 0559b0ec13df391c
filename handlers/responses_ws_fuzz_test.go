package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// FuzzWebSocketMessage: whatever a Responses WebSocket message holds, the
// gateway answers it with events ending in response.completed or an error
// event, or closes the connection with a close frame; it never hangs, and
// once the connection is gone every byte of body memory the message, its
// turn and the connection's memory of it took is given back.
func FuzzWebSocketMessage(f *testing.F) {
	for _, seed := range []string{
		echoTurn,
		`{"type":"response.create","model":"offline","generate":false,"input":"warm"}`,
		`{"type":"response.create","model":"offline","store":false,"previous_response_id":"resp_x","input":[{"role":"user","content":"hi"}]}`,
		`{"type":"response.create","model":"offline","background":true,"input":"hi"}`,
		`{"type":"response.create","model":"nope","input":"hi"}`,
		`{"type":"response.processed"}`,
		`{"type":"nonsense"}`,
		`{"type":"response.create","model":"offline","input":` + strings.Repeat("[", 200) + `}`,
		`not json`,
		``,
	} {
		f.Add([]byte(seed))
	}
	g, _ := testGateway(f, echoModels, func(o *GatewayOptions) { o.MaxRequestBody = 64 << 10 })
	url := wsGateway(f, g, newFlipResolver())
	f.Fuzz(func(t *testing.T, msg []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer sk-ws-test-key"}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
			t.Fatal(err)
		}
		// Whether an answer is due: a processed acknowledgement gets none.
		if !strings.Contains(string(msg), `"response.processed"`) {
			for {
				_, b, err := c.Read(ctx)
				if err != nil {
					if websocket.CloseStatus(err) == -1 {
						t.Fatalf("no answer and no close frame for %q: %v", msg, err)
					}
					break
				}
				s := string(b)
				if strings.Contains(s, `"type":"error"`) || strings.Contains(s, `"type":"response.completed"`) {
					break
				}
			}
		}
		c.Close(websocket.StatusNormalClosure, "")
		for deadline := time.Now().Add(2 * time.Second); ; {
			used, _, _ := g.bodyMem.stats()
			if used == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d bytes of body memory held after the connection closed (message %q)", used, msg)
			}
			time.Sleep(time.Millisecond)
		}
	})
}
