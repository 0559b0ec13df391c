package modellist

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// accountHint is the one-line fix shown when a bedrock/ or vertex_ai/
// entry is given an api_key.
func accountHint(k Kind) string {
	if k == KindBedrock {
		return "set aws_access_key_id and aws_secret_access_key, or leave them out to use the AWS environment and profile chain"
	}
	return "set vertex_credentials to a service-account JSON file"
}

// foreignAccountFields refuses another provider's account fields, which
// would otherwise be silently ignored (an aws_region_name on an
// anthropic/ entry is a deployment that is not where its author thinks).
func (p *parser) foreignAccountFields(d *Deployment, fs map[string]field, w where) {
	check := func(names []string, owner Kind, prefix string) {
		if d.Kind == owner {
			return
		}
		for _, name := range names {
			if f, ok := fs[name]; ok {
				p.errorf(f.key, w.sub(name), "only %s/ deployments take %s; remove it, or write model: %s/<model>", prefix, name, prefix)
			}
		}
	}
	check(awsFields(), KindBedrock, "bedrock")
	check(vertexFields(), KindVertex, "vertex_ai")
}

// account reads a bedrock/ or vertex_ai/ entry's account fields and settles
// its endpoint: base when api_base was given, else the service's regional
// endpoint. n locates errors about missing fields.
func (p *parser) account(d *Deployment, fs map[string]field, w where, n *yaml.Node, base string) {
	if d.Kind == KindBedrock {
		p.awsAccount(d, fs, w, n, base)
		return
	}
	p.vertexAccount(d, fs, w, n, base)
}

// text reads an optional account field (os.environ/ allowed), refusing
// surrounding whitespace and control characters, which in a key or
// region are always a paste or $(cat) accident.
func (p *parser) text(fs map[string]field, name string, w where) (string, *yaml.Node, bool) {
	f, ok := fs[name]
	if !ok {
		return "", nil, true
	}
	fw := w.sub(name)
	s, ok := p.optional(f.val, fw)
	if !ok {
		return "", f.val, false
	}
	if strings.TrimSpace(s) != s {
		p.errorf(f.val, fw, "has leading or trailing whitespace (often a newline from $(cat file)); strip it")
		return "", f.val, false
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		p.errorf(f.val, fw, "contains control characters; check the value or the environment variable it comes from")
		return "", f.val, false
	}
	return s, f.val, true
}

// isHostLabel accepts what may go into a host name as one label: a region
// such as us-east-1, or a location such as europe-west1.
func isHostLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

func (p *parser) awsAccount(d *Deployment, fs map[string]field, w where, n *yaml.Node, base string) {
	id, idNode, ok1 := p.text(fs, "aws_access_key_id", w)
	secret, secretNode, ok2 := p.text(fs, "aws_secret_access_key", w)
	token, tokenNode, ok3 := p.text(fs, "aws_session_token", w)
	region, regionNode, ok4 := p.text(fs, "aws_region_name", w)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return
	}
	switch {
	case id != "" && secret == "":
		p.errorf(orNode(secretNode, idNode), w.sub("aws_secret_access_key"), "required with aws_access_key_id: the key pair's secret, e.g. aws_secret_access_key: os.environ/AWS_SECRET_ACCESS_KEY")
		return
	case secret != "" && id == "":
		p.errorf(orNode(idNode, secretNode), w.sub("aws_access_key_id"), "required with aws_secret_access_key: the key pair's id, e.g. aws_access_key_id: os.environ/AWS_ACCESS_KEY_ID")
		return
	case token != "" && id == "":
		p.errorf(tokenNode, w.sub("aws_session_token"), "a session token goes with the temporary key pair it was issued with; set aws_access_key_id and aws_secret_access_key too, or remove it to use the AWS chain")
		return
	}
	if region == "" {
		// The SDK's own variables, read through the same lookup so that
		// tests and the loaded config agree.
		for _, name := range [...]string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
			if v, set := p.getenv(name); set && v != "" {
				region = v
				break
			}
		}
	}
	if region == "" {
		p.errorf(orNode(regionNode, n), w.sub("aws_region_name"), "required for bedrock/: the region Bedrock runs in, e.g. aws_region_name: us-east-1 (or export AWS_REGION)")
		return
	}
	if !isHostLabel(region) {
		p.errorf(orNode(regionNode, n), w.sub("aws_region_name"), "is not an AWS region name; write it like us-east-1 or eu-central-1")
		return
	}
	if base == "" {
		base = "https://bedrock-runtime." + region + ".amazonaws.com"
	}
	d.APIBase = base
	d.AWS = &AWSAccount{Region: region, AccessKeyID: id, SecretAccessKey: secret, SessionToken: token}
}

// serviceAccount is what the gateway needs of a service-account key file.
type serviceAccount struct {
	Type        string `json:"type"`
	ProjectID   string `json:"project_id"`
	ClientEmail string `json:"client_email"`
	PrivateKey  string `json:"private_key"`
	TokenURI    string `json:"token_uri"`
}

func (p *parser) vertexAccount(d *Deployment, fs map[string]field, w where, n *yaml.Node, base string) {
	at := vertexPlace{base: base}
	var ok1, ok2, ok3 bool
	at.project, at.projectNode, ok1 = p.text(fs, "vertex_project", w)
	at.location, at.locationNode, ok2 = p.text(fs, "vertex_location", w)
	file, fileNode, ok3 := p.text(fs, "vertex_credentials", w)
	if !ok1 || !ok2 || !ok3 {
		return
	}
	cw := w.sub("vertex_credentials")
	if fileNode == nil {
		// Application Default Credentials, found when the first request
		// needs a token (GKE workload identity, the instance's service
		// account, gcloud's login): nothing names the project then.
		if at.project == "" {
			p.errorf(n, w.sub("vertex_project"), "required for vertex_ai/ without vertex_credentials (Application Default Credentials name no project): the Google Cloud project id, e.g. vertex_project: my-project; or give vertex_credentials: /path/to/service-account.json")
			return
		}
		if !p.vertexLocation(d, w, n, at) {
			return
		}
		d.Vertex.ADC = true
		return
	}
	if file == "" {
		p.errorf(fileNode, cw, "is empty: give the path of a service-account JSON key file, e.g. vertex_credentials: /etc/modelgate/vertex-sa.json, or leave it out to use Application Default Credentials")
		return
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(filepath.Dir(p.source), file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		// The os error names the path, which is not a secret.
		p.errorf(fileNode, cw, "cannot read the service-account file: %v", err)
		return
	}
	var sa serviceAccount
	if err := json.Unmarshal(data, &sa); err != nil {
		p.errorf(fileNode, cw, "%s is not JSON; give the key file downloaded for a service account (IAM → Service accounts → Keys → JSON)", file)
		return
	}
	if sa.Type != "service_account" {
		p.errorf(fileNode, cw, "%s is not a service-account key (its type is %q); create a JSON key for a service account with the Vertex AI User role, or leave vertex_credentials out to use Application Default Credentials", file, sa.Type)
		return
	}
	if sa.ClientEmail == "" || sa.PrivateKey == "" {
		p.errorf(fileNode, cw, "%s lacks client_email or private_key; download the service account's JSON key again", file)
		return
	}
	if !rsaKey(sa.PrivateKey) {
		p.errorf(fileNode, cw, "%s: private_key is not a PEM RSA private key; download the service account's JSON key again", file)
		return
	}
	if sa.TokenURI == "" {
		sa.TokenURI = "https://oauth2.googleapis.com/token"
	}
	if u, err := url.Parse(sa.TokenURI); err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))) {
		// The signed assertion would travel in the clear otherwise.
		p.errorf(fileNode, cw, "%s: token_uri must be an https:// URL (http:// only to a loopback address)", file)
		return
	}
	if at.project == "" {
		at.project = sa.ProjectID
	}
	if at.project == "" {
		p.errorf(orNode(at.projectNode, n), w.sub("vertex_project"), "required for vertex_ai/ (the key file names no project_id): the Google Cloud project id, e.g. vertex_project: my-project")
		return
	}
	if !p.vertexLocation(d, w, n, at) {
		return
	}
	d.Vertex.CredentialsFile, d.Vertex.Credentials = file, data
	d.Vertex.ClientEmail, d.Vertex.TokenURI = sa.ClientEmail, sa.TokenURI
}

// vertexPlace is where a vertex_ai/ deployment runs. The nodes are the
// entry's fields the values came from, for errors; nil when the entry has
// no such field (the project may then come from the key file).
type vertexPlace struct {
	project, location         string
	projectNode, locationNode *yaml.Node
	base                      string // api_base, "" for the location's endpoint
}

// vertexLocation checks the project and the location and sets the
// deployment's address and account. n locates errors about missing fields.
func (p *parser) vertexLocation(d *Deployment, w where, n *yaml.Node, at vertexPlace) bool {
	project, location, base := at.project, at.location, at.base
	if strings.ContainsAny(project, "/?#% ") {
		p.errorf(orNode(at.projectNode, n), w.sub("vertex_project"), "is not a Google Cloud project id; write it like my-project-123")
		return false
	}
	if location == "" {
		p.errorf(orNode(at.locationNode, n), w.sub("vertex_location"), "required for vertex_ai/: where the model runs, e.g. vertex_location: us-east5, europe-west1 or global")
		return false
	}
	if !isHostLabel(location) {
		p.errorf(at.locationNode, w.sub("vertex_location"), "is not a Vertex AI location; write it like us-east5, europe-west1 or global")
		return false
	}
	if base == "" {
		// The global endpoint has no region in its host name.
		base = "https://" + location + "-aiplatform.googleapis.com"
		if location == "global" {
			base = "https://aiplatform.googleapis.com"
		}
	}
	d.APIBase = base
	d.Vertex = &VertexAccount{Project: project, Location: location}
	return true
}

// rsaKey reports whether s is a PEM RSA private key (PKCS#8, as Google
// issues them, or PKCS#1).
func rsaKey(s string) bool {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return false
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		_, ok := k.(*rsa.PrivateKey)
		return ok
	}
	_, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	return err == nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func orNode(ns ...*yaml.Node) *yaml.Node {
	if i := slices.IndexFunc(ns, func(n *yaml.Node) bool { return n != nil }); i >= 0 {
		return ns[i]
	}
	return nil
}
