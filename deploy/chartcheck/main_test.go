package main

import (
	"strings"
	"testing"
)

const goodDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: m}
spec:
  selector: {matchLabels: {app: m}}
  template:
    metadata: {labels: {app: m}}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
        - name: m
          image: m
          envFrom: [{secretRef: {name: s}}]
          readinessProbe: {httpGet: {path: /health/readiness, port: 8080}}
          livenessProbe: {httpGet: {path: /health/liveliness, port: 8080}}
          securityContext: {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`

const rest = `
---
apiVersion: v1
kind: Service
metadata: {name: m}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: m}
data: {Caddyfile: ":8080", models.yaml: "model_list: []"}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: m}
spec: {minAvailable: 1, selector: {matchLabels: {app: m}}}
`

func TestCheck(t *testing.T) {
	if _, err := check([]byte(goodDeployment+rest), ""); err != nil {
		t.Fatalf("good chart refused: %v", err)
	}
	// A misspelled field is an error, not silently dropped.
	bad := strings.Replace(goodDeployment, "readinessProbe", "readinesProbe", 1)
	if _, err := check([]byte(bad+rest), ""); err == nil || !strings.Contains(err.Error(), "readinesProbe") {
		t.Fatalf("misspelled field: %v", err)
	}
	// The kubelet sends no key: a probe on /health (admin-only, 401
	// without a key) would keep every pod unready and restart it.
	for _, probe := range []string{"readinessProbe", "livenessProbe"} {
		i := strings.Index(goodDeployment, probe)
		j := i + strings.Index(goodDeployment[i:], "\n")
		keyed := goodDeployment[:i] + probe + ": {httpGet: {path: /health, port: 8080}}" + goodDeployment[j:]
		if _, err := check([]byte(keyed+rest), ""); err == nil || !strings.Contains(err.Error(), "without a key") {
			t.Fatalf("%s on /health accepted: %v", probe, err)
		}
	}
	noRO := strings.Replace(goodDeployment, "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", 1)
	if _, err := check([]byte(noRO+rest), ""); err == nil {
		t.Fatal("writable root accepted")
	}
	sm := "\n---\napiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: m}\nspec: {selector: {}, endpoints: [{port: http, pth: /metrics}]}\n"
	if _, err := check([]byte(goodDeployment+rest+sm), ""); err == nil || !strings.Contains(err.Error(), "pth") {
		t.Fatalf("misspelled ServiceMonitor field: %v", err)
	}
}
