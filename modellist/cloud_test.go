package modellist

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeServiceAccount writes a service-account key file as Google issues
// them (a PKCS#8 RSA key in PEM) and returns its path.
func writeServiceAccount(t *testing.T, dir string, mutate func(map[string]string)) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sa := map[string]string{
		"type":         "service_account",
		"project_id":   "proj-from-file",
		"client_email": "gw@proj-from-file.iam.gserviceaccount.com",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"token_uri":    "https://oauth2.googleapis.com/token",
	}
	if mutate != nil {
		mutate(sa)
	}
	b, _ := json.Marshal(sa)
	path := filepath.Join(dir, "sa.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBedrockEntries(t *testing.T) {
	env := envOf("AK", "AKIAEXAMPLEKEY123", "SK", "secret/secret+secret", "AWS_REGION", "eu-west-3")
	c, _ := mustParse(t, one("{model: bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0, aws_access_key_id: os.environ/AK, aws_secret_access_key: os.environ/SK, aws_region_name: us-west-2}"), env)
	d := c.Deployments[0]
	if d.Kind != KindBedrock || d.Model != "us.anthropic.claude-sonnet-4-5-20250929-v1:0" || d.Local {
		t.Fatalf("deployment = %+v", d)
	}
	if d.APIBase != "https://bedrock-runtime.us-west-2.amazonaws.com" {
		t.Errorf("APIBase = %q", d.APIBase)
	}
	if a := d.AWS; a == nil || a.Region != "us-west-2" || a.AccessKeyID != "AKIAEXAMPLEKEY123" || a.SecretAccessKey != "secret/secret+secret" || !a.Static() {
		t.Errorf("AWS = %+v", d.AWS)
	}
	// Nothing printable carries the key pair.
	j, _ := json.Marshal(d)
	for _, s := range []string{d.String(), fmt.Sprintf("%#v", *d), fmt.Sprintf("%v", d), string(j)} {
		if strings.Contains(s, "AKIAEXAMPLEKEY123") || strings.Contains(s, "secret/secret") {
			t.Errorf("secret printed: %s", s)
		}
	}

	// Region from the SDK's variable; credentials from the AWS chain.
	c, _ = mustParse(t, one("{model: bedrock/anthropic.claude-3-haiku-20240307-v1:0}"), env)
	d = c.Deployments[0]
	if d.AWS.Region != "eu-west-3" || d.AWS.Static() || d.APIBase != "https://bedrock-runtime.eu-west-3.amazonaws.com" {
		t.Errorf("chain deployment = %+v %+v", d, d.AWS)
	}

	// An api_base with the operation's path in it is a warning naming the fix.
	_, warns := mustParse(t, one("{model: bedrock/m, aws_region_name: us-east-1, api_base: 'https://vpce.example.com/model/x/invoke'}"), nil)
	if len(warns) != 1 || !strings.Contains(warns[0], "appends /model/<model id>/invoke itself") {
		t.Errorf("warnings = %q", warns)
	}

	// api_base overrides the endpoint (a VPC endpoint, a fake).
	c, _ = mustParse(t, one("{model: bedrock/m, aws_region_name: us-east-1, api_base: 'http://127.0.0.1:9/'}"), nil)
	if d := c.Deployments[0]; d.APIBase != "http://127.0.0.1:9" || d.AWS.Region != "us-east-1" {
		t.Errorf("override = %+v", d)
	}
}

func TestVertexEntries(t *testing.T) {
	dir := t.TempDir()
	sa := writeServiceAccount(t, dir, nil)
	src := one("{model: vertex_ai/claude-sonnet-4-5@20250929, vertex_credentials: sa.json, vertex_location: us-east5}")
	c, _, err := Parse([]byte(src), filepath.Join(dir, "models.yaml"), envOf())
	if err != nil {
		t.Fatal(err)
	}
	d := c.Deployments[0]
	v := d.Vertex
	if d.Kind != KindVertex || v == nil || v.Project != "proj-from-file" || v.Location != "us-east5" || v.CredentialsFile != sa ||
		v.ClientEmail != "gw@proj-from-file.iam.gserviceaccount.com" || len(v.Credentials) == 0 {
		t.Fatalf("deployment = %+v %+v", d, v)
	}
	if d.APIBase != "https://us-east5-aiplatform.googleapis.com" {
		t.Errorf("APIBase = %q", d.APIBase)
	}
	j, _ := json.Marshal(d)
	if strings.Contains(string(j), "PRIVATE KEY") {
		t.Errorf("key in JSON: %s", j)
	}

	// Without a key file: Application Default Credentials, looked up
	// when a request needs a token, and the project must be named.
	c, _ = mustParse(t, one("{model: vertex_ai/claude-sonnet-4-5@20250929, vertex_location: europe-west1, vertex_project: adc-proj}"), envOf())
	if v := c.Deployments[0].Vertex; !v.ADC || v.Project != "adc-proj" || v.Credentials != nil || c.Deployments[0].APIBase != "https://europe-west1-aiplatform.googleapis.com" {
		t.Errorf("ADC entry = %+v", v)
	}

	src = one("{model: vertex_ai/claude-opus-4-5, vertex_credentials: os.environ/GOOGLE_APPLICATION_CREDENTIALS, vertex_location: global, vertex_project: other}")
	c, _ = mustParse(t, src, envOf("GOOGLE_APPLICATION_CREDENTIALS", sa))
	if d := c.Deployments[0]; d.APIBase != "https://aiplatform.googleapis.com" || d.Vertex.Project != "other" {
		t.Errorf("global = %+v %+v", d, d.Vertex)
	}
}

// TestCloudEntryErrors: every message names the entry, the field and the fix.
func TestCloudEntryErrors(t *testing.T) {
	dir := t.TempDir()
	sa := writeServiceAccount(t, dir, nil)
	notSA := filepath.Join(dir, "user.json")
	_ = os.WriteFile(notSA, []byte(`{"type":"authorized_user","client_id":"x"}`), 0o600)
	badKey := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(badKey, []byte(`{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}`), 0o600)
	plainToken := writeServiceAccount(t, t.TempDir(), func(m map[string]string) { m["token_uri"] = "http://tokens.example.com/token" })
	noProject := writeServiceAccount(t, t.TempDir(), func(m map[string]string) { delete(m, "project_id") })
	tests := []struct {
		name, params string
		env          []string
		want         []string
	}{
		{"bedrock region required", "{model: bedrock/m}", nil,
			[]string{`model_list[0] (model_name "m"): proxy_params.aws_region_name: required for bedrock/`, "export AWS_REGION"}},
		{"bedrock region shape", "{model: bedrock/m, aws_region_name: 'us east'}", nil, []string{"aws_region_name: is not an AWS region name"}},
		{"bedrock secret without id", "{model: bedrock/m, aws_region_name: us-east-1, aws_secret_access_key: s3cretvalue}", nil,
			[]string{"proxy_params.aws_access_key_id: required with aws_secret_access_key"}},
		{"bedrock id without secret", "{model: bedrock/m, aws_region_name: us-east-1, aws_access_key_id: AKIAEXAMPLE}", nil,
			[]string{"proxy_params.aws_secret_access_key: required with aws_access_key_id"}},
		{"bedrock token alone", "{model: bedrock/m, aws_region_name: us-east-1, aws_session_token: tok}", nil,
			[]string{"proxy_params.aws_session_token: a session token goes with the temporary key pair"}},
		{"bedrock api_key", "{model: bedrock/m, aws_region_name: us-east-1, api_key: sk-1234567890}", nil,
			[]string{"proxy_params.api_key: bedrock/ authenticates with the cloud account's own credentials", "aws_access_key_id"}},
		{"bedrock unset env", "{model: bedrock/m, aws_region_name: us-east-1, aws_access_key_id: os.environ/NOPE, aws_secret_access_key: x}", nil,
			[]string{"proxy_params.aws_access_key_id: environment variable NOPE is unset or empty"}},
		{"bedrock newline in secret", "{model: bedrock/m, aws_region_name: us-east-1, aws_access_key_id: AKIA, aws_secret_access_key: os.environ/SK}", []string{"SK", "abc\n"},
			[]string{"aws_secret_access_key: has leading or trailing whitespace"}},
		{"aws field elsewhere", "{model: anthropic/claude, api_key: sk-ant-123456789, aws_region_name: us-east-1}", nil,
			[]string{"proxy_params.aws_region_name: only bedrock/ deployments take aws_region_name"}},
		{"bedrock responses native", "{model: bedrock/m, aws_region_name: us-east-1, responses_api: native}", nil,
			[]string{"proxy_params.responses_api: native needs a server that serves /responses itself", "bedrock/ is always translated"}},
		{"bedrock api_base credentials", "{model: bedrock/m, aws_region_name: us-east-1, api_base: 'https://u:p@vpce.example.com'}", nil,
			[]string{"proxy_params.api_base: must not contain credentials"}},
		{"vertex field elsewhere", "{model: bedrock/m, aws_region_name: us-east-1, vertex_location: us-east5}", nil,
			[]string{"proxy_params.vertex_location: only vertex_ai/ deployments take vertex_location"}},
		{"vertex project required with ADC", "{model: vertex_ai/claude, vertex_location: us-east5}", nil,
			[]string{"proxy_params.vertex_project: required for vertex_ai/ without vertex_credentials", "vertex_project: my-project"}},
		{"vertex credentials empty", "{model: vertex_ai/claude, vertex_location: us-east5, vertex_project: p, vertex_credentials: ''}", nil,
			[]string{"proxy_params.vertex_credentials: is empty", "leave it out to use Application Default Credentials"}},
		{"vertex file missing", "{model: vertex_ai/claude, vertex_location: us-east5, vertex_credentials: /nonexistent/sa.json}", nil,
			[]string{"vertex_credentials: cannot read the service-account file", "/nonexistent/sa.json"}},
		{"vertex not a service account", "{model: vertex_ai/claude, vertex_location: us-east5, vertex_credentials: '" + notSA + "'}", nil,
			[]string{"is not a service-account key (its type is \"authorized_user\")"}},
		{"vertex bad key", "{model: vertex_ai/claude, vertex_location: us-east5, vertex_credentials: '" + badKey + "'}", nil,
			[]string{"private_key is not a PEM RSA private key"}},
		{"vertex plain token_uri", "{model: vertex_ai/claude, vertex_location: us-east5, vertex_credentials: '" + plainToken + "'}", nil,
			[]string{"token_uri must be an https:// URL"}},
		{"vertex location required", "{model: vertex_ai/claude, vertex_credentials: '" + sa + "'}", nil,
			[]string{"proxy_params.vertex_location: required for vertex_ai/", "us-east5"}},
		{"vertex location shape", "{model: vertex_ai/claude, vertex_location: 'evil.com/x', vertex_credentials: '" + sa + "'}", nil,
			[]string{"vertex_location: is not a Vertex AI location"}},
		{"vertex project required", "{model: vertex_ai/claude, vertex_location: us-east5, vertex_credentials: '" + noProject + "'}", nil,
			[]string{"proxy_params.vertex_project: required for vertex_ai/ (the key file names no project_id)"}},
		{"vertex api_key", "{model: vertex_ai/claude, vertex_location: us-east5, vertex_credentials: '" + sa + "', api_key: sk-1234567890}", nil,
			[]string{"proxy_params.api_key: vertex_ai/ authenticates with the cloud account's own credentials", "vertex_credentials"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse([]byte(one(tt.params)), "models.yaml", envOf(tt.env...))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			for _, secret := range []string{"s3cretvalue", "sk-1234567890", "abc\n"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error prints a secret: %v", err)
				}
			}
		})
	}
}
