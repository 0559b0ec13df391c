package fakes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// BedrockOptions shapes the Bedrock fake.
type BedrockOptions struct {
	Options
	// Region the signature's scope must name.
	Region string
	// The only key pair the fake knows; SessionToken, when set, must come
	// as X-Amz-Security-Token.
	AccessKeyID, SecretAccessKey, SessionToken string
	// Expired makes the fake refuse the (valid) signature as AWS refuses
	// an expired session token.
	Expired bool
	// StreamException, when set (e.g. "throttlingException"), is sent
	// in-band after StreamExceptionAfter chunks, instead of the rest.
	StreamException      string
	StreamExceptionAfter int
}

// bedrockException names the exception AWS answers each status with.
func bedrockException(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "ThrottlingException"
	case http.StatusForbidden:
		return "AccessDeniedException"
	case http.StatusBadRequest:
		return "ValidationException"
	case http.StatusNotFound:
		return "ResourceNotFoundException"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableException"
	}
	return "InternalServerException"
}

// Bedrock returns a Bedrock runtime server for Claude: POST
// /model/{modelId}/invoke, /invoke-with-response-stream (an AWS event
// stream framed with the SDK's encoder, each chunk carrying one Anthropic
// event) and /count-tokens. Like the real service it recomputes each
// request's SigV4 signature (with the SDK's signer, over the headers the
// request says it signed and the body it carries) and refuses a wrong
// one, an unknown key, a stale date or a scope for another region or
// service; and it refuses bodies with a model or stream key, without
// anthropic_version: bedrock-2023-05-31, or with a beta flag it does not
// know.
func Bedrock(o BedrockOptions, rec *Recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		if rec != nil {
			rec.add(r, body)
		}
		fail := func(status int, exception, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-Errortype", exception+":http://internal.amazon.com/coral/com.amazon.bedrock/")
			w.Header().Set("X-Amzn-Requestid", "fake-bedrock-request")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"message":%q}`, msg)
		}
		if status, exception, msg := o.verifySignature(r, body); status != 0 {
			fail(status, exception, msg)
			return
		}
		if o.Expired {
			fail(http.StatusForbidden, "ExpiredTokenException", "The security token included in the request is expired")
			return
		}
		if o.Status != 0 {
			fail(o.Status, bedrockException(o.Status), fmt.Sprintf("fake failure %d", o.Status))
			return
		}
		// The model id is one path segment, escaped.
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/model/")
		seg, op, ok2 := strings.Cut(rest, "/")
		model, err := url.PathUnescape(seg)
		if !ok || !ok2 || err != nil || model == "" || r.Method != http.MethodPost {
			fail(http.StatusNotFound, "UnknownOperationException", "unknown operation")
			return
		}
		if op == "count-tokens" {
			var env struct {
				Input struct {
					InvokeModel struct {
						Body string `json:"body"`
					} `json:"invokeModel"`
				} `json:"input"`
			}
			inner, err := []byte(nil), json.Unmarshal(body, &env)
			if err == nil {
				inner, err = base64.StdEncoding.DecodeString(env.Input.InvokeModel.Body)
			}
			if err != nil || len(inner) == 0 {
				fail(http.StatusBadRequest, "ValidationException", "input.invokeModel.body: a base64 InvokeModel body is required")
				return
			}
			if _, msg := checkBedrockBody(inner); msg != "" {
				fail(http.StatusBadRequest, "ValidationException", msg)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"inputTokens":%d}`, 40+len(inner)/100)
			return
		}
		req, msg := checkBedrockBody(body)
		if msg != "" {
			fail(http.StatusBadRequest, "ValidationException", msg)
			return
		}
		tool := wantsTool(req.Tools, req.Messages)
		w.Header().Set("X-Amzn-Requestid", "fake-bedrock-request")
		switch op {
		case "invoke":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, anthropicMessage(o.Options, model, tool))
		case "invoke-with-response-stream":
			w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
			w.WriteHeader(http.StatusOK)
			enc := eventstream.NewEncoder()
			sent, stopped := 0, false
			anthropicStream(o.Options, r, model, tool, func(name, data string) {
				if stopped || name == "ping" { // Bedrock relays no pings
					return
				}
				if o.StreamException != "" && sent == o.StreamExceptionAfter {
					_ = enc.Encode(w, BedrockExceptionFrame(o.StreamException, "Too many tokens, please wait before trying again."))
					flush(w)
					stopped = true
					return
				}
				_ = enc.Encode(w, BedrockChunkFrame(data))
				flush(w)
				sent++
			})
		default:
			fail(http.StatusNotFound, "UnknownOperationException", "unknown operation")
		}
	})
}

type bedrockRequest struct {
	Messages []json.RawMessage `json:"messages"`
	Tools    json.RawMessage   `json:"tools"`
}

// checkBedrockBody validates an InvokeModel body as Bedrock does for
// Claude; msg is the ValidationException's text.
func checkBedrockBody(body []byte) (bedrockRequest, string) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return bedrockRequest{}, "Malformed input request: the body is not a JSON object"
	}
	var version string
	_ = json.Unmarshal(m["anthropic_version"], &version)
	if version != "bedrock-2023-05-31" {
		return bedrockRequest{}, "Malformed input request: #: required key [anthropic_version] not found or invalid"
	}
	for _, k := range []string{"model", "stream"} {
		if _, ok := m[k]; ok {
			return bedrockRequest{}, fmt.Sprintf("Malformed input request: #: extraneous key [%s] is not permitted", k)
		}
	}
	if _, ok := m["max_tokens"]; !ok {
		return bedrockRequest{}, "Malformed input request: #: required key [max_tokens] not found"
	}
	if raw, ok := m["anthropic_beta"]; ok {
		var betas []string
		if json.Unmarshal(raw, &betas) != nil {
			return bedrockRequest{}, "Malformed input request: #/anthropic_beta: expected type: JSONArray"
		}
		for _, b := range betas {
			switch b {
			// The flags AWS documents for Claude on Bedrock (model
			// parameters, anthropic_beta), 2025-11.
			case "computer-use-2024-10-22", "computer-use-2025-01-24", "computer-use-2025-11-24",
				"token-efficient-tools-2025-02-19", "interleaved-thinking-2025-05-14", "dev-full-thinking-2025-05-14",
				"output-128k-2025-02-19", "context-1m-2025-08-07", "context-management-2025-06-27",
				"effort-2025-11-24", "tool-search-tool-2025-10-19", "tool-examples-2025-10-29":
			default:
				return bedrockRequest{}, "invalid beta flag"
			}
		}
	}
	var req bedrockRequest
	_ = json.Unmarshal(body, &req)
	if len(req.Messages) == 0 {
		return bedrockRequest{}, "Malformed input request: #: required key [messages] not found"
	}
	return req, ""
}

// BedrockChunkFrame is an event-stream frame carrying one Anthropic
// event, as InvokeModelWithResponseStream sends it.
func BedrockChunkFrame(event string) eventstream.Message {
	payload, _ := json.Marshal(map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(event)), "p": "abcdefgh"})
	var hs eventstream.Headers
	hs.Set(":event-type", eventstream.StringValue("chunk"))
	hs.Set(":content-type", eventstream.StringValue("application/json"))
	hs.Set(":message-type", eventstream.StringValue("event"))
	return eventstream.Message{Headers: hs, Payload: payload}
}

// BedrockExceptionFrame is an in-band exception frame.
func BedrockExceptionFrame(exception, message string) eventstream.Message {
	payload, _ := json.Marshal(map[string]string{"message": message})
	var hs eventstream.Headers
	hs.Set(":exception-type", eventstream.StringValue(exception))
	hs.Set(":content-type", eventstream.StringValue("application/json"))
	hs.Set(":message-type", eventstream.StringValue("exception"))
	return eventstream.Message{Headers: hs, Payload: payload}
}

// verifySignature checks r's SigV4 signature the way AWS does: the
// credential scope, the date, and the signature recomputed from the
// secret the fake holds over what r carries. status is 0 when it holds.
func (o BedrockOptions) verifySignature(r *http.Request, body []byte) (status int, exception, msg string) {
	const missing = "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders'"
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return http.StatusForbidden, "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	fields := map[string]string{}
	for _, part := range strings.Split(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	cred, signed, sig := fields["Credential"], fields["SignedHeaders"], fields["Signature"]
	if cred == "" || signed == "" || sig == "" {
		return http.StatusForbidden, "IncompleteSignatureException", missing
	}
	scope := strings.Split(cred, "/") // AKID/date/region/service/aws4_request
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return http.StatusForbidden, "IncompleteSignatureException", "Credential should be scoped to a valid region."
	}
	if scope[0] != o.AccessKeyID {
		return http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	if scope[2] != o.Region || scope[3] != "bedrock" {
		return http.StatusForbidden, "InvalidSignatureException", fmt.Sprintf("Credential should be scoped to a valid region and service: want %s/bedrock", o.Region)
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || scope[1] != when.Format("20060102") {
		return http.StatusForbidden, "IncompleteSignatureException", "X-Amz-Date is missing or does not match the credential scope"
	}
	if d := time.Since(when); d > 5*time.Minute || d < -5*time.Minute {
		return http.StatusForbidden, "InvalidSignatureException", "Signature expired"
	}
	if o.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != o.SessionToken {
		return http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	// Rebuild the request from what arrived: the URL as sent, the body,
	// and only the headers the client says it signed.
	u := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	check, _ := http.NewRequest(r.Method, u.String(), bytes.NewReader(body))
	check.Host = r.Host
	check.ContentLength = 0
	for _, name := range strings.Split(signed, ";") {
		switch name {
		case "host":
		case "content-length":
			check.ContentLength = r.ContentLength
		default:
			vs := r.Header.Values(name)
			if len(vs) == 0 {
				return http.StatusForbidden, "IncompleteSignatureException", "a signed header is missing: " + name
			}
			check.Header[http.CanonicalHeaderKey(name)] = vs
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: o.AccessKeyID, SecretAccessKey: o.SecretAccessKey, SessionToken: o.SessionToken}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, check, hex.EncodeToString(sum[:]), "bedrock", o.Region, when); err != nil {
		return http.StatusInternalServerError, "InternalServerException", err.Error()
	}
	want := check.Header.Get("Authorization")
	if want != r.Header.Get("Authorization") {
		return http.StatusForbidden, "InvalidSignatureException",
			"The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
	}
	return 0, "", ""
}
