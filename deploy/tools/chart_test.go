// Package tools holds the deployment's checks, in a module of their own so
// that helm and the Kubernetes API types never enter mcpsafe's module graph.
// scripts/test runs them (`cd deploy/tools && go test ./...`).
package tools

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chart = "../helm/mcpsafe"

// helm runs the helm of this module's tool directive.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "helm"}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		return out.String() + stderr.String(), err
	}
	return out.String(), nil
}

// rendered is the chart's manifests, each decoded strictly into its
// Kubernetes API type: a field the API does not have, or a value of the
// wrong type, fails (the types are what the API's OpenAPI schemas are
// generated from; no cluster, and no schema download, is needed).
type rendered struct {
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	pdbs         map[string]*policyv1.PodDisruptionBudget
}

func render(t *testing.T, set ...string) rendered {
	t.Helper()
	args := []string{"template", "team", chart, "--namespace", "mcpsafe"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	r := rendered{map[string]*appsv1.Deployment{}, map[string]*appsv1.StatefulSet{}, map[string]*corev1.Service{}, map[string]*corev1.ConfigMap{}, map[string]*policyv1.PodDisruptionBudget{}}
	for _, doc := range strings.Split(out, "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("a rendered document is not YAML: %v\n%s", err, doc)
		}
		strict := func(v any) {
			t.Helper()
			if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
				t.Fatalf("%s %s does not match the Kubernetes API: %v\n%s", head.APIVersion, head.Kind, err, doc)
			}
		}
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 Deployment":
			var d appsv1.Deployment
			strict(&d)
			r.deployments[d.Name] = &d
		case "apps/v1 StatefulSet":
			var s appsv1.StatefulSet
			strict(&s)
			r.statefulSets[s.Name] = &s
		case "v1 Service":
			var s corev1.Service
			strict(&s)
			r.services[s.Name] = &s
		case "v1 ConfigMap":
			var c corev1.ConfigMap
			strict(&c)
			r.configMaps[c.Name] = &c
		case "policy/v1 PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			strict(&p)
			r.pdbs[p.Name] = &p
		default:
			t.Fatalf("the chart renders a %s %s this test does not check", head.APIVersion, head.Kind)
		}
	}
	return r
}

func TestChartLints(t *testing.T) {
	if out, err := helm(t, "lint", "--strict", chart); err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
}

// The defaults render the team deployment: the approval service as 3
// replicas and the gateway as 2, non-root on a read-only root filesystem,
// with probes, a disruption budget, secrets mounted from Kubernetes secrets
// and never on a command line.
func TestChartRendersHardenedReplicas(t *testing.T) {
	r := render(t)
	approvals, gateway := r.deployments["team-mcpsafe-approvals"], r.statefulSets["team-mcpsafe-gateway"]
	if approvals == nil || gateway == nil {
		t.Fatalf("want the approvals Deployment and the gateway StatefulSet, got %v %v", keys(r.deployments), keys(r.statefulSets))
	}
	if *approvals.Spec.Replicas != 3 || *gateway.Spec.Replicas != 2 {
		t.Fatalf("replicas: approvals %d, gateway %d", *approvals.Spec.Replicas, *gateway.Spec.Replicas)
	}
	for name, pod := range map[string]corev1.PodSpec{"approvals": approvals.Spec.Template.Spec, "gateway": gateway.Spec.Template.Spec} {
		psc := pod.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			t.Errorf("%s: pod may run as root: %+v", name, psc)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Errorf("%s: mounts a service account token it does not need", name)
		}
		for _, c := range pod.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				t.Errorf("%s: container %s is not locked down: %+v", name, c.Name, sc)
			}
			if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
				c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("%s: want /healthz liveness and /readyz readiness probes", name)
			}
			args := strings.Join(c.Args, " ")
			for _, secret := range []string{"password", "hunter2", "BEGIN", "secret="} {
				if strings.Contains(strings.ToLower(args), strings.ToLower(secret)) {
					t.Errorf("%s: a secret may be on the command line: %s", name, args)
				}
			}
			var pg bool
			for _, e := range c.Env {
				if e.Name == "PGPASSWORD" {
					pg = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
				} else if e.Value != "" {
					t.Errorf("%s: literal environment value %s", name, e.Name)
				}
			}
			if !pg {
				t.Errorf("%s: the PostgreSQL password does not come from a secret reference", name)
			}
		}
		for _, v := range pod.Volumes {
			if v.Secret != nil && (v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o077 != 0) {
				t.Errorf("%s: secret volume %s is readable by group or others", name, v.Name)
			}
		}
	}
	args := strings.Join(gateway.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--key-file=", "--ledger=postgres://", "--audience=gateway.example.internal", "--journal=/var/lib/mcpsafe/",
		"--approver-url=http://team-mcpsafe-approvals.mcpsafe.svc:8080/webhook", "--approver-secret-file="} {
		if !strings.Contains(args, want) {
			t.Errorf("gateway args %q lack %q", args, want)
		}
	}
	if len(gateway.Spec.VolumeClaimTemplates) != 1 {
		t.Error("each gateway replica needs a volume of its own for its journal")
	}
	for _, pdb := range []string{"team-mcpsafe-approvals", "team-mcpsafe-gateway"} {
		if p := r.pdbs[pdb]; p == nil || p.Spec.MinAvailable == nil || p.Spec.MinAvailable.IntValue() < 1 {
			t.Errorf("no disruption budget keeping %s available", pdb)
		}
	}
	if r.services["team-mcpsafe-approvals"] == nil || r.services["team-mcpsafe-gateway"] == nil || r.configMaps["team-mcpsafe-gateway"] == nil {
		t.Error("missing a service or the gateway's configuration")
	}
}

// A configuration that would keep approval state in one pod does not
// render: the service on memory or a file, the gateway on an unshared
// ledger; control: the defaults (PostgreSQL) render (above).
func TestChartRefusesStateInOnePod(t *testing.T) {
	for _, set := range []string{
		"approvals.store.url=memory",
		"approvals.store.url=file:/tmp/approvals.db",
		"gateway.ledger.url=memory:",
		"gateway.ledger.url=file:/tmp/ledger.db",
		"gateway.audience=",
		"approvals.origin=",
	} {
		if out, err := helm(t, "template", "team", chart, "--set", set); err == nil {
			t.Errorf("--set %s rendered:\n%.300s", set, out)
		}
	}
	// Control: Redis is a shared ledger too.
	r := render(t, "gateway.ledger.url=redis://redis.example.internal:6379/0")
	if !strings.Contains(strings.Join(r.statefulSets["team-mcpsafe-gateway"].Spec.Template.Spec.Containers[0].Args, " "), "--ledger=redis://") {
		t.Fatal("a Redis ledger did not reach the gateway")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
