// Package secrettest generates credentials that look real and are not: the
// shapes of the providers' keys and tokens filled with seeded random
// characters, for the firewall's tests and benchmarks. None of them was
// ever issued by anyone.
package secrettest

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
)

// Credential is one generated secret and the text around it an agent
// would plausibly send (a .env line, a config file, shell output).
type Credential struct {
	Kind  string
	Value string
	// Text holds Value in context.
	Text string
}

const (
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower  = "abcdefghijklmnopqrstuvwxyz"
	digits = "0123456789"
	alnum  = upper + lower + digits
	b32    = upper + "234567"
	hexLow = "0123456789abcdef"
)

type gen struct{ r *rand.Rand }

func (g gen) pick(set string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(set[g.r.IntN(len(set))])
	}
	return b.String()
}

// mixed is n characters of set with at least one upper, lower and digit
// somewhere, as real keys of that length have.
func (g gen) mixed(n int) string {
	for {
		s := g.pick(alnum, n)
		if strings.ContainsAny(s, upper) && strings.ContainsAny(s, lower) && strings.ContainsAny(s, digits) {
			return s
		}
	}
}

func (g gen) b64(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (g gen) b64url(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func (g gen) privateKey(kind string) string {
	body := g.b64(600)
	var lines []string
	for len(body) > 64 {
		lines = append(lines, body[:64])
		body = body[64:]
	}
	lines = append(lines, body)
	return "-----BEGIN " + kind + "PRIVATE KEY-----\n" + strings.Join(lines, "\n") + "\n-----END " + kind + "PRIVATE KEY-----"
}

func (g gen) jwt() string {
	head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"` + g.pick(digits, 10) + `","name":"` + g.pick(lower, 8) + `","iat":1700000000}`))
	return head + "." + claims + "." + g.b64url(32)
}

// Corpus returns one credential of each kind the firewall promises to
// catch, generated from seed.
func Corpus(seed uint64) []Credential {
	g := gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	awsID := "AKIA" + g.pick(b32, 16)
	awsSecret := g.mixed(40)
	gcpKey := "AIza" + g.pick(alnum+"_-", 35)
	azure := g.pick(lower, 3) + g.pick(digits, 1) + "Q~" + g.mixed(32)
	pg := g.mixed(20)
	creds := []Credential{
		{Kind: "rsa-private-key", Value: g.privateKey("RSA ")},
		{Kind: "openssh-private-key", Value: g.privateKey("OPENSSH ")},
		{Kind: "ec-private-key", Value: g.privateKey("EC ")},
		{Kind: "aws-access-key-id", Value: awsID, Text: "AWS_ACCESS_KEY_ID=" + awsID},
		{Kind: "aws-secret-access-key", Value: awsSecret, Text: "[default]\naws_secret_access_key = " + awsSecret},
		{Kind: "gcp-api-key", Value: gcpKey, Text: `const apiKey = "` + gcpKey + `";`},
		{Kind: "gcp-service-account", Value: g.privateKey(""), Text: ""},
		{Kind: "azure-client-secret", Value: azure, Text: "AZURE_CLIENT_SECRET=" + azure},
		{Kind: "github-pat", Value: "ghp_" + g.mixed(36)},
		{Kind: "github-fine-grained-pat", Value: "github_pat_" + g.mixed(22) + "_" + g.mixed(59)},
		{Kind: "gitlab-pat", Value: "glpat-" + g.mixed(20)},
		{Kind: "slack-bot-token", Value: "xoxb-" + g.pick(digits, 12) + "-" + g.pick(digits, 13) + "-" + g.mixed(24)},
		{Kind: "slack-user-token", Value: "xoxp-" + g.pick(digits, 12) + "-" + g.pick(digits, 12) + "-" + g.pick(digits, 13) + "-" + g.pick(hexLow, 32)},
		{Kind: "stripe-secret-key", Value: "sk_live_" + g.mixed(24)},
		{Kind: "stripe-restricted-key", Value: "rk_live_" + g.mixed(24)},
		{Kind: "postgres-url", Value: pg, Text: "DATABASE_URL=postgres://app:" + pg + "@db.internal:5432/prod"},
		{Kind: "mysql-url", Value: pg + "m", Text: "mysql://root:" + pg + "m@10.0.0.7:3306/shop"},
		{Kind: "mongodb-url", Value: pg + "x", Text: "MONGO_URI=mongodb+srv://svc:" + pg + "x@cluster0.example.net/app"},
		{Kind: "jwt", Value: g.jwt()},
		{Kind: "anthropic-api-key", Value: "sk-ant-api03-" + g.pick(alnum+"_-", 93) + "AA"},
		{Kind: "openai-api-key", Value: "sk-proj-" + g.pick(alnum+"_-", 74) + "T3BlbkFJ" + g.pick(alnum+"_-", 74)},
		{Kind: "npm-token", Value: "npm_" + g.mixed(36)},
		{Kind: "sendgrid-api-key", Value: "SG." + g.mixed(22) + "." + g.mixed(43)},
		{Kind: "generic-api-key", Value: g.mixed(32), Text: ""},
	}
	for i := range creds {
		c := &creds[i]
		switch {
		case c.Kind == "gcp-service-account":
			c.Text = `{"type": "service_account", "project_id": "demo-` + g.pick(lower, 6) + `", "private_key": "` +
				strings.ReplaceAll(c.Value, "\n", `\n`) + `\n", "client_email": "svc@demo.iam.gserviceaccount.com"}`
			c.Value = strings.ReplaceAll(c.Value, "\n", `\n`)
		case c.Kind == "generic-api-key":
			c.Text = "export SERVICE_TOKEN=" + c.Value
		case c.Text == "":
			c.Text = "token: " + c.Value
		}
	}
	return creds
}
