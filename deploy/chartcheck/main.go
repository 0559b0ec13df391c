// Command chartcheck reads `helm template` output on stdin and decodes
// every manifest strictly into the official Kubernetes API types (unknown
// or misspelled fields fail), then checks what the Modelgate chart promises:
// probes on the keyless /health/readiness and /health/liveliness, a
// PodDisruptionBudget, secrets by reference, a
// hardened security context. It is its own Go module so the gateway's
// module never depends on Kubernetes. Usage:
//
//	helm template x deploy/helm/modelgate --set existingSecret=s | go run . [-extract dir]
//
// With -extract, the ConfigMap's Caddyfile and models.yaml are written to
// dir, for `caddy adapt` to parse.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// serviceMonitor is the part of the Prometheus Operator's CRD the chart
// renders; decoding into it strictly catches a misspelled field.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port              string                    `json:"port"`
			Path              string                    `json:"path"`
			Interval          string                    `json:"interval"`
			BearerTokenSecret *corev1.SecretKeySelector `json:"bearerTokenSecret,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

func main() {
	extract := flag.String("extract", "", "directory to write the ConfigMap's Caddyfile and models.yaml to")
	flag.Parse()
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	kinds, err := check(in, *extract)
	if err != nil {
		fail(err)
	}
	fmt.Printf("chartcheck: %d manifests decoded strictly: %s\n", len(kinds), strings.Join(kinds, ", "))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chartcheck:", err)
	os.Exit(1)
}

// check decodes every document of a rendered chart and returns their kinds.
func check(in []byte, extract string) ([]string, error) {
	var kinds []string
	seen := map[string]bool{}
	var dep *appsv1.Deployment
	var pdb *policyv1.PodDisruptionBudget
	for _, doc := range bytes.Split(in, []byte("\n---")) {
		doc = bytes.TrimSpace(doc)
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("a manifest is not YAML: %w", err)
		}
		var obj any
		switch tm.APIVersion + "/" + tm.Kind {
		case "apps/v1/Deployment":
			dep = &appsv1.Deployment{}
			obj = dep
		case "v1/Service":
			obj = &corev1.Service{}
		case "v1/ConfigMap":
			obj = &corev1.ConfigMap{}
		case "policy/v1/PodDisruptionBudget":
			pdb = &policyv1.PodDisruptionBudget{}
			obj = pdb
		case "monitoring.coreos.com/v1/ServiceMonitor":
			obj = &serviceMonitor{}
		default:
			return nil, fmt.Errorf("unexpected manifest %s %s: add its type to chartcheck", tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("%s does not decode strictly into the official type: %w", tm.Kind, err)
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok && extract != "" {
			for _, name := range []string{"Caddyfile", "models.yaml"} {
				if err := os.WriteFile(filepath.Join(extract, name), []byte(cm.Data[name]), 0o600); err != nil {
					return nil, err
				}
			}
		}
		kinds = append(kinds, tm.Kind)
		seen[tm.Kind] = true
	}
	for _, k := range []string{"Deployment", "Service", "ConfigMap", "PodDisruptionBudget"} {
		if !seen[k] {
			return nil, fmt.Errorf("the chart rendered no %s", k)
		}
	}
	return kinds, checkDeployment(dep, pdb)
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l...)
			out = append(out, '\n')
		}
	}
	return out
}

// checkDeployment holds the chart to its promises.
func checkDeployment(d *appsv1.Deployment, pdb *policyv1.PodDisruptionBudget) error {
	var errs []error
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		return fmt.Errorf("deployment has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	// The kubelet sends no key, so each probe must GET a path the gateway
	// answers without one (the route table's public entries, handlers/routes.go in the gateway's module);
	// /health needs an admin key and would answer 401 forever.
	probes := []struct {
		name  string
		probe *corev1.Probe
		paths []string
	}{
		{"readiness", c.ReadinessProbe, []string{"/health/readiness"}},
		{"liveness", c.LivenessProbe, []string{"/health/liveliness", "/health/liveness"}},
	}
	for _, p := range probes {
		if p.probe == nil || p.probe.HTTPGet == nil || !slices.Contains(p.paths, p.probe.HTTPGet.Path) {
			errs = append(errs, fmt.Errorf("the %s probe must GET %s, which the gateway answers without a key", p.name, strings.Join(p.paths, " or ")))
		}
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		errs = append(errs, errors.New("the container must have a read-only root, no privilege escalation and drop ALL capabilities"))
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		errs = append(errs, errors.New("the pod must run as non-root"))
	}
	byRef := false
	for _, e := range c.EnvFrom {
		if e.SecretRef != nil && e.SecretRef.Name != "" {
			byRef = true
		}
	}
	for _, e := range c.Env {
		if strings.Contains(strings.ToUpper(e.Name), "KEY") && e.Value != "" {
			errs = append(errs, fmt.Errorf("env %s holds a literal value; keys come from the Secret", e.Name))
		}
	}
	if !byRef {
		errs = append(errs, errors.New("keys must come from a Secret by reference (envFrom secretRef)"))
	}
	if pdb.Spec.Selector == nil || fmt.Sprint(pdb.Spec.Selector.MatchLabels) != fmt.Sprint(d.Spec.Selector.MatchLabels) {
		errs = append(errs, errors.New("the PodDisruptionBudget must select the deployment's pods"))
	}
	return errors.Join(errs...)
}
