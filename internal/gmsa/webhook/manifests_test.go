package webhook

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const manifestDir = "../../../deploy/gmsa-webhook"

// manifests are the objects of deploy/gmsa-webhook/*.yaml, decoded strictly (an unknown or
// misspelt field fails), in file order.
func manifests(t *testing.T) []runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	files, err := filepath.Glob(filepath.Join(manifestDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", manifestDir, err)
	}
	var objs []runtime.Object
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(f))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", file, i, err)
			}
			if j, err := yaml.YAMLToJSON(doc); err != nil || bytes.Equal(j, []byte("null")) {
				if err != nil {
					t.Fatalf("%s: document %d: %v", file, i, err)
				}
				continue // comments only
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: document %d: %v", file, i, err)
			}
			objs = append(objs, obj)
		}
		f.Close()
	}
	return objs
}

// only is the one object of type T among objs.
func only[T runtime.Object](t *testing.T, objs []runtime.Object) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if o, ok := o.(T); ok {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("%d objects of type %T, want 1", len(found), zero)
	}
	return found[0]
}

const (
	namespace   = "gmsa-webhook"
	appLabel    = "app.kubernetes.io/name"
	optInLabel  = "gmsa-webhook.idplane.io/enabled"
	serviceName = "gmsa-webhook"
)

func TestManifestsKinds(t *testing.T) {
	var kinds []string
	for _, o := range manifests(t) {
		kinds = append(kinds, reflect.TypeOf(o).Elem().Name())
	}
	want := []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
		"Deployment", "PodDisruptionBudget", "Service", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
	if !slices.Equal(kinds, want) {
		t.Errorf("objects %q, want, in that order (kubectl apply -f of the directory), %q", kinds, want)
	}
}

func TestManifestsCRD(t *testing.T) {
	crd := only[*apiextensionsv1.CustomResourceDefinition](t, manifests(t))
	s := crd.Spec
	if crd.Name != "gmsacredentialspecs.windows.k8s.io" || s.Group != "windows.k8s.io" || s.Scope != apiextensionsv1.ClusterScoped ||
		s.Names.Kind != "GMSACredentialSpec" || s.Names.Plural != "gmsacredentialspecs" {
		t.Errorf("CRD %s: group %s scope %s names %+v", crd.Name, s.Group, s.Scope, s.Names)
	}
	var versions []string
	for _, v := range s.Versions {
		versions = append(versions, v.Name)
		if !v.Served || v.Storage != (v.Name == "v1") {
			t.Errorf("version %s: served %t storage %t", v.Name, v.Served, v.Storage)
		}
		credspec, ok := v.Schema.OpenAPIV3Schema.Properties["credspec"]
		if !ok || credspec.Type != "object" || credspec.XPreserveUnknownFields == nil || !*credspec.XPreserveUnknownFields {
			t.Errorf("version %s: credspec %+v, want an object preserving unknown fields", v.Name, credspec)
		}
	}
	if !slices.Equal(versions, []string{"v1", "v1alpha1"}) {
		t.Errorf("versions %q", versions)
	}
}

func TestManifestsRBAC(t *testing.T) {
	objs := manifests(t)
	sa := only[*corev1.ServiceAccount](t, objs)
	role := only[*rbacv1.ClusterRole](t, objs)
	binding := only[*rbacv1.ClusterRoleBinding](t, objs)
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{"windows.k8s.io"}, Resources: []string{"gmsacredentialspecs"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"localsubjectaccessreviews"}, Verbs: []string{"create"}},
	}
	if d := cmp.Diff(wantRules, role.Rules); d != "" {
		t.Errorf("ClusterRole rules (-want +got):\n%s", d)
	}
	wantSubjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: namespace}}
	if sa.Namespace != namespace || binding.RoleRef.Name != role.Name || binding.RoleRef.Kind != "ClusterRole" || !cmp.Equal(binding.Subjects, wantSubjects) {
		t.Errorf("binding %+v of role %s to %+v, want to %+v", binding.RoleRef, role.Name, binding.Subjects, wantSubjects)
	}
}

func TestManifestsDeployment(t *testing.T) {
	objs := manifests(t)
	ns := only[*corev1.Namespace](t, objs)
	d := only[*appsv1.Deployment](t, objs)
	pdb := only[*policyv1.PodDisruptionBudget](t, objs)
	svc := only[*corev1.Service](t, objs)
	sa := only[*corev1.ServiceAccount](t, objs)
	if ns.Name != namespace || d.Namespace != namespace || pdb.Namespace != namespace || svc.Namespace != namespace || svc.Name != serviceName {
		t.Fatalf("namespace %s, objects in %s %s %s, service %s", ns.Name, d.Namespace, pdb.Namespace, svc.Namespace, svc.Name)
	}
	pod := d.Spec.Template
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	if pod.Spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("nodeSelector %v, want Linux nodes", pod.Spec.NodeSelector)
	}
	if pod.Spec.ServiceAccountName != sa.Name {
		t.Errorf("service account %q, want %q", pod.Spec.ServiceAccountName, sa.Name)
	}
	podLabels := labels.Set(pod.Labels)
	if a := pod.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Errorf("no pod anti-affinity: %+v", a)
	} else {
		term := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
		if term.TopologyKey != "kubernetes.io/hostname" || !selects(t, term.LabelSelector, podLabels) {
			t.Errorf("anti-affinity %+v does not spread the replicas over nodes", term)
		}
	}
	for what, sel := range map[string]*metav1.LabelSelector{"deployment": d.Spec.Selector, "PodDisruptionBudget": pdb.Spec.Selector} {
		if !selects(t, sel, podLabels) {
			t.Errorf("%s selector %v does not select the pods %v", what, sel, pod.Labels)
		}
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("service selector %v does not select the pods %v", svc.Spec.Selector, pod.Labels)
	}
	if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(1) {
		t.Errorf("PodDisruptionBudget minAvailable %v, want 1", pdb.Spec.MinAvailable)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort != intstr.FromString("https") {
		t.Errorf("service ports %+v, want 443 to https", svc.Spec.Ports)
	}

	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if len(c.Ports) != 1 || c.Ports[0].Name != "https" || c.Ports[0].ContainerPort != 8443 {
		t.Errorf("container ports %+v, want https 8443", c.Ports)
	}
	for what, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Scheme != corev1.URISchemeHTTPS || p.HTTPGet.Port != intstr.FromString("https") {
			t.Errorf("%s probe %+v, want HTTPS GET /health", what, p)
		}
	}
	if len(c.Args) == 0 || c.Args[0] != "gmsa-webhook" {
		t.Errorf("args %q do not run idplane gmsa-webhook", c.Args)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	var secret string
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			secret = v.Secret.SecretName
			dir := mounts[v.Name]
			for _, want := range []string{"--tls-cert-file=" + dir + "/tls.crt", "--tls-private-key-file=" + dir + "/tls.key"} {
				if dir == "" || !slices.Contains(c.Args, want) {
					t.Errorf("args %q do not have %s from the secret volume", c.Args, want)
				}
			}
		}
	}
	if secret != "gmsa-webhook-tls" {
		t.Errorf("certificate secret %q, want gmsa-webhook-tls", secret)
	}
}

func selects(t *testing.T, s *metav1.LabelSelector, set labels.Set) bool {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return !sel.Empty() && sel.Matches(set)
}

// webhookSpec is what the tests check of a mutating or validating webhook.
type webhookSpec struct {
	name                    string
	path                    string
	rules                   []admissionregistrationv1.RuleWithOperations
	namespaceSelector       *metav1.LabelSelector
	matchConditions         []admissionregistrationv1.MatchCondition
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	service                 *admissionregistrationv1.ServiceReference
}

func webhookSpecs(t *testing.T) (mutating, validating []webhookSpec) {
	objs := manifests(t)
	for _, w := range only[*admissionregistrationv1.MutatingWebhookConfiguration](t, objs).Webhooks {
		mutating = append(mutating, webhookSpec{w.Name, "/mutate", w.Rules, w.NamespaceSelector, w.MatchConditions, w.FailurePolicy,
			w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.ClientConfig.Service})
	}
	for _, w := range only[*admissionregistrationv1.ValidatingWebhookConfiguration](t, objs).Webhooks {
		validating = append(validating, webhookSpec{w.Name, "/validate", w.Rules, w.NamespaceSelector, w.MatchConditions, w.FailurePolicy,
			w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.ClientConfig.Service})
	}
	return mutating, validating
}

func rule(ops []admissionregistrationv1.OperationType, resources ...string) admissionregistrationv1.RuleWithOperations {
	scope := admissionregistrationv1.NamespacedScope
	return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{
		APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: resources, Scope: &scope}}
}

// TestManifestsWebhookConfigurations checks what every webhook has in common: the service and
// path, v1 reviews, no side effects, Fail, 10 s, the pod rules, never the webhook's namespace.
func TestManifestsWebhookConfigurations(t *testing.T) {
	mutating, validating := webhookSpecs(t)
	create, update := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	wantRules := map[string][]admissionregistrationv1.RuleWithOperations{
		// The expander has nothing to fill on an update other than of debug containers.
		"/mutate": {rule(create, "pods"), rule(update, "pods/ephemeralcontainers")},
		// The authorizer also sees the other writes of a pod's annotations.
		"/validate": {rule(append(create, update...), "pods"), rule(update, "pods/ephemeralcontainers", "pods/status"), rule(create, "pods/binding")},
	}
	for _, w := range append(mutating, validating...) {
		if s := w.service; s == nil || s.Namespace != namespace || s.Name != serviceName || s.Path == nil || *s.Path != w.path || s.Port == nil || *s.Port != 443 {
			t.Errorf("%s %s: service %+v", w.path, w.name, s)
		}
		if !slices.Equal(w.admissionReviewVersions, []string{"v1"}) || w.sideEffects == nil || *w.sideEffects != admissionregistrationv1.SideEffectClassNone ||
			w.failurePolicy == nil || *w.failurePolicy != admissionregistrationv1.Fail || w.timeoutSeconds == nil || *w.timeoutSeconds != 10 {
			t.Errorf("%s %s: versions %q sideEffects %v failurePolicy %v timeout %v", w.path, w.name,
				w.admissionReviewVersions, w.sideEffects, w.failurePolicy, w.timeoutSeconds)
		}
		if d := cmp.Diff(wantRules[w.path], w.rules); d != "" {
			t.Errorf("%s %s: rules (-want +got):\n%s", w.path, w.name, d)
		}
		if selects(t, w.namespaceSelector, labels.Set{"kubernetes.io/metadata.name": namespace, optInLabel: "true"}) {
			t.Errorf("%s %s: matches the webhook's own namespace", w.path, w.name)
		}
	}
	if len(mutating) != 2 || len(validating) != 2 {
		t.Errorf("%d mutating and %d validating webhooks, want 2 and 2", len(mutating), len(validating))
	}
}

// TestManifestsMatching: which pods in which namespaces each configuration sends to the webhook,
// with the match conditions compiled and run by the API server's own CEL machinery.
func TestManifestsMatching(t *testing.T) {
	windowsOS := func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} }
	windowsNodes := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "windows"} }
	linuxNodes := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"} }
	plain := newPod(linuxNodes)
	// big is a pod as large as a match condition is likely to see, to stay within the runtime cost budget.
	big := newPod(func(p *corev1.Pod) {
		for i := range 200 {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: strings.Repeat("c", i+1)[:min(i+1, 63)]})
			annotate(strings.Repeat("a", i%60+1)+string(rune('a'+i%26))+"/x", "v")(p)
		}
	}, withDebug("dbg", "webapp1", ""))
	cases := []struct {
		name     string
		pod, old *corev1.Pod
		// windows: the pod is the windows-pods webhooks' business in a namespace that has not opted in.
		windows bool
	}{
		{name: "Linux pod", pod: plain},
		{name: "pod without os or nodeSelector", pod: newPod()},
		{name: "spec.os windows", pod: newPod(windowsOS), windows: true},
		{name: "spec.os linux", pod: newPod(func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Linux} })},
		{name: "nodeSelector windows", pod: newPod(windowsNodes), windows: true},
		{name: "name on the pod", pod: newPod(linuxNodes, onPod("webapp1", "")), windows: true},
		{name: "contents on a container", pod: newPod(linuxNodes, onApp("", webapp1)), windows: true},
		{name: "name on an init container", pod: newPod(linuxNodes, withInit("webapp1", "")), windows: true},
		{name: "name on a debug container", pod: newPod(linuxNodes, withDebug("dbg", "webapp1", "")), windows: true},
		{name: "other Windows options", pod: newPod(linuxNodes, func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{RunAsUserName: ptr("u")}}
		})},
		{name: "pod alpha annotation", pod: newPod(linuxNodes, annotate(podNameAnnotation, "webapp1")), windows: true},
		{name: "container alpha annotation", pod: newPod(linuxNodes, annotate("app.container.alpha.windows.kubernetes.io/gmsa-credential-spec", "{}")), windows: true},
		{name: "update dropping GMSA", pod: plain, old: newPod(linuxNodes, onApp("webapp1", webapp1)), windows: true},
		{name: "update of a Linux pod", pod: plain, old: plain},
		{name: "large GMSA pod", pod: big, windows: true},
	}
	namespaces := []struct {
		name   string
		labels labels.Set
		// optedIn: every pod is sent; own: none is.
		optedIn, own bool
	}{
		{name: "default", labels: labels.Set{"kubernetes.io/metadata.name": "default"}},
		{name: "opted in", labels: labels.Set{"kubernetes.io/metadata.name": "team", optInLabel: "true"}, optedIn: true},
		{name: "opt-in label not true", labels: labels.Set{"kubernetes.io/metadata.name": "team", optInLabel: "yes"}},
		{name: "the webhook's own", labels: labels.Set{"kubernetes.io/metadata.name": namespace}, own: true},
		{name: "the webhook's own, labelled to opt in", labels: labels.Set{"kubernetes.io/metadata.name": namespace, optInLabel: "true"}, own: true},
	}
	mutating, validating := webhookSpecs(t)
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	for _, config := range [][]webhookSpec{mutating, validating} {
		for _, tc := range cases {
			for _, ns := range namespaces {
				op := admission.Create
				if tc.old != nil {
					op = admission.Update
				}
				if config[0].path == "/mutate" && op == admission.Update {
					continue // no rule sends pod updates to the expander
				}
				var called []string
				for _, w := range config {
					if selects(t, w.namespaceSelector, ns.labels) && matches(t, compiler, w, tc.pod, tc.old, op) {
						called = append(called, w.name)
					}
				}
				want := 0
				if !ns.own && (ns.optedIn || tc.windows) {
					want = 1
				}
				if len(called) != want {
					t.Errorf("%s: %s %s in namespace %s: called %q, want %d webhook", config[0].path, op, tc.name, ns.name, called, want)
				}
			}
		}
	}
}

// TestManifestsMatchingMetadataWrites: status writes and bindings reach the validating webhook
// only when they involve the alpha annotations, in every namespace but the webhook's own.
func TestManifestsMatchingMetadataWrites(t *testing.T) {
	alpha := annotate(podNameAnnotation, "webapp1")
	linux := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"} }
	binding := func(annotations map[string]string) *corev1.Binding {
		return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: annotations},
			Target: corev1.ObjectReference{Kind: "Node", Name: "node1"}}
	}
	cases := []struct {
		name        string
		obj, old    runtime.Object
		subresource string
		op          admission.Operation
		sent        bool
	}{
		{name: "status of a Linux pod", obj: newPod(linux, annotate("team", "web")), old: newPod(linux), subresource: "status", op: admission.Update},
		{name: "status of a GMSA pod", obj: newPod(onApp("webapp1", webapp1)), old: newPod(onApp("webapp1", webapp1)), subresource: "status", op: admission.Update},
		{name: "status adding alpha annotations", obj: newPod(linux, alpha), old: newPod(linux), subresource: "status", op: admission.Update, sent: true},
		{name: "status of a pod with alpha annotations", obj: newPod(linux, alpha), old: newPod(linux, alpha), subresource: "status", op: admission.Update, sent: true},
		{name: "binding", obj: binding(map[string]string{"team": "web"}), subresource: "binding", op: admission.Create},
		{name: "binding with alpha annotations", obj: binding(map[string]string{podNameAnnotation: "webapp1"}), subresource: "binding", op: admission.Create, sent: true},
	}
	_, validating := webhookSpecs(t)
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	for _, tc := range cases {
		for _, ns := range []labels.Set{{"kubernetes.io/metadata.name": "default"}, {"kubernetes.io/metadata.name": "team", optInLabel: "true"}} {
			var called []string
			for _, w := range validating {
				if selects(t, w.namespaceSelector, ns) && matchesWrite(t, compiler, w, tc.obj, tc.old, tc.subresource, tc.op) {
					called = append(called, w.name)
				}
			}
			if want := map[bool]int{false: 0, true: 1}[tc.sent]; len(called) != want {
				t.Errorf("%s in namespace %v: called %q, want %d webhook", tc.name, ns, called, want)
			}
		}
	}
}

// matches runs a webhook's match conditions on a write of pod as the API server does.
func matches(t *testing.T, compiler plugincel.ConditionCompiler, w webhookSpec, pod, old *corev1.Pod, op admission.Operation) bool {
	t.Helper()
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	return matchesWrite(t, compiler, w, pod, oldObj, "", op)
}

// matchesWrite runs a webhook's match conditions on a write of obj (to subresource) as the API
// server does, after checking that they compile both as new expressions (what the API server
// requires of a configuration being written) and as stored ones.
func matchesWrite(t *testing.T, compiler plugincel.ConditionCompiler, w webhookSpec, obj, old runtime.Object, subresource string, op admission.Operation) bool {
	t.Helper()
	if len(w.matchConditions) == 0 {
		return true
	}
	var exprs []plugincel.ExpressionAccessor
	for _, c := range w.matchConditions {
		exprs = append(exprs, &matchconditions.MatchCondition{Name: c.Name, Expression: c.Expression})
	}
	decls := plugincel.OptionalVariableDeclarations{HasAuthorizer: true}
	for _, mode := range []environment.Type{environment.NewExpressions, environment.StoredExpressions} {
		if errs := compiler.CompileCondition(exprs, decls, mode).CompilationErrors(); len(errs) > 0 {
			t.Fatalf("%s: match conditions do not compile: %v", w.name, errs)
		}
	}
	evaluator := compiler.CompileCondition(exprs, decls, environment.StoredExpressions)
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	if _, ok := obj.(*corev1.Binding); ok {
		gvk = corev1.SchemeGroupVersion.WithKind("Binding")
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	attrs := admission.NewAttributesRecord(obj, old, gvk, m.GetNamespace(), m.GetName(), corev1.SchemeGroupVersion.WithResource("pods"), subresource, op,
		nil, false, &user.DefaultInfo{Name: "bob"})
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: admission.NewLazyObject(obj), VersionedOldObject: admission.NewLazyObject(old)}
	result := matchconditions.NewMatcher(evaluator, w.failurePolicy, "webhook", "admit", w.name).Match(context.Background(), versioned, nil, nil)
	if result.Error != nil {
		t.Fatalf("%s: match conditions failed on %s: %v", w.name, m.GetName(), result.Error)
	}
	return result.Matches
}
