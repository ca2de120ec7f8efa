package defaults

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/idplane/idplane/internal/podwalk"
)

// Pod defaults a pod as upstream does on decode. serviceAccountName is left alone: the
// ServiceAccount admission plugin sets it later, and only for pods that are being created.
func Pod(p *corev1.Pod) {
	// Only pods (not pod templates) get requests from limits, so templates keep round-tripping
	// unchanged through controllers.
	requestsFromLimits(p.Spec.Containers)
	requestsFromLimits(p.Spec.InitContainers)
	orDefaultPtr(&p.Spec.EnableServiceLinks, corev1.DefaultEnableServiceLinks)
	if p.Spec.HostNetwork {
		hostPortsFromContainerPorts(p.Spec.Containers)
		hostPortsFromContainerPorts(p.Spec.InitContainers)
	}
	podSpec(&p.Spec)
	syncLegacyPodFields(p)
}

// syncLegacyPodFields keeps the v1 pod's paired fields in step, as upstream's v1 conversion does:
// the deprecated spec.serviceAccount mirrors serviceAccountName (and fills it for old clients), and
// the singular status.podIP/hostIP are the first of their plural lists.
func syncLegacyPodFields(p *corev1.Pod) {
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = p.Spec.DeprecatedServiceAccount
	}
	p.Spec.DeprecatedServiceAccount = p.Spec.ServiceAccountName
	if p.Status.PodIP != "" && len(p.Status.PodIPs) == 0 {
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	}
	if len(p.Status.PodIPs) > 0 {
		p.Status.PodIP = p.Status.PodIPs[0].IP
	}
	if p.Status.HostIP != "" && len(p.Status.HostIPs) == 0 {
		p.Status.HostIPs = []corev1.HostIP{{IP: p.Status.HostIP}}
	}
	if len(p.Status.HostIPs) > 0 {
		p.Status.HostIP = p.Status.HostIPs[0].IP
	}
}

// PodList defaults every pod of the list.
func PodList(l *corev1.PodList) {
	for i := range l.Items {
		Pod(&l.Items[i])
	}
}

func requestsFromLimits(containers []corev1.Container) {
	for i := range containers {
		r := &containers[i].Resources
		if r.Limits == nil {
			continue
		}
		if r.Requests == nil {
			r.Requests = make(corev1.ResourceList, len(r.Limits))
		}
		for name, limit := range r.Limits {
			if _, set := r.Requests[name]; !set {
				r.Requests[name] = limit.DeepCopy()
			}
		}
	}
}

// hostPortsFromContainerPorts mirrors container ports onto the host: with host networking the
// two are the same socket, and the scheduler needs hostPort to detect conflicts.
func hostPortsFromContainerPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			port := &containers[i].Ports[j]
			if port.HostPort == 0 {
				port.HostPort = port.ContainerPort
			}
		}
	}
}

func podSpec(s *corev1.PodSpec) {
	orDefault(&s.DNSPolicy, corev1.DNSClusterFirst)
	orDefault(&s.RestartPolicy, corev1.RestartPolicyAlways)
	orDefault(&s.SchedulerName, corev1.DefaultSchedulerName)
	orDefaultPtr(&s.SecurityContext, corev1.PodSecurityContext{})
	orDefaultPtr(&s.TerminationGracePeriodSeconds, int64(corev1.DefaultTerminationGracePeriodSeconds))
	for i := range s.Volumes {
		volume(&s.Volumes[i])
	}
	for c := range podwalk.Containers(s) {
		container(c.Container)
	}
	roundResources(s.Overhead)
	if s.Resources != nil {
		roundResources(s.Resources.Limits)
		roundResources(s.Resources.Requests)
	}
}

func container(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicyFor(c.Image)
	}
	orDefault(&c.TerminationMessagePath, corev1.TerminationMessagePathDefault)
	orDefault(&c.TerminationMessagePolicy, corev1.TerminationMessageReadFile)
	for i := range c.Ports {
		orDefault(&c.Ports[i].Protocol, corev1.ProtocolTCP)
	}
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		if from == nil {
			continue
		}
		if from.FieldRef != nil {
			fieldSelector(from.FieldRef)
		}
		if from.FileKeyRef != nil {
			orDefaultPtr(&from.FileKeyRef.Optional, false)
		}
	}
	roundResources(c.Resources.Limits)
	roundResources(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p != nil {
			probe(p)
		}
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil && h.HTTPGet != nil {
				httpGet(h.HTTPGet)
			}
		}
	}
}

func fieldSelector(f *corev1.ObjectFieldSelector) {
	orDefault(&f.APIVersion, "v1")
}

func probe(p *corev1.Probe) {
	orDefault(&p.TimeoutSeconds, 1)
	orDefault(&p.PeriodSeconds, 10)
	orDefault(&p.SuccessThreshold, 1)
	orDefault(&p.FailureThreshold, 3)
	if p.HTTPGet != nil {
		httpGet(p.HTTPGet)
	}
	if p.GRPC != nil {
		orDefaultPtr(&p.GRPC.Service, "")
	}
}

func httpGet(h *corev1.HTTPGetAction) {
	orDefault(&h.Path, "/")
	orDefault(&h.Scheme, corev1.URISchemeHTTP)
}

func volume(v *corev1.Volume) {
	// A volume that names no source is an emptyDir, the one source with no required fields.
	if ptr.AllPtrFieldsNil(&v.VolumeSource) {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	src := &v.VolumeSource
	if src.HostPath != nil {
		hostPath(src.HostPath)
	}
	if src.Secret != nil {
		orDefaultPtr(&src.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil {
		orDefaultPtr(&src.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		orDefaultPtr(&src.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		downwardAPIItems(src.DownwardAPI.Items)
	}
	if src.Projected != nil {
		projected(src.Projected)
	}
	if src.ISCSI != nil {
		orDefault(&src.ISCSI.ISCSIInterface, "default")
	}
	if src.RBD != nil {
		rbd(&src.RBD.RBDPool, &src.RBD.RadosUser, &src.RBD.Keyring)
	}
	if src.AzureDisk != nil {
		azureDisk(src.AzureDisk)
	}
	if src.ScaleIO != nil {
		scaleIO(&src.ScaleIO.StorageMode, &src.ScaleIO.FSType)
	}
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		claimSpec(&src.Ephemeral.VolumeClaimTemplate.Spec)
	}
	if src.Image != nil && src.Image.PullPolicy == "" {
		src.Image.PullPolicy = pullPolicyFor(src.Image.Reference)
	}
}

func downwardAPIItems(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if items[i].FieldRef != nil {
			fieldSelector(items[i].FieldRef)
		}
	}
}

func projected(p *corev1.ProjectedVolumeSource) {
	orDefaultPtr(&p.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.DownwardAPI != nil {
			downwardAPIItems(s.DownwardAPI.Items)
		}
		if s.ServiceAccountToken != nil {
			orDefaultPtr(&s.ServiceAccountToken.ExpirationSeconds, int64(time.Hour/time.Second))
		}
	}
}

func hostPath(h *corev1.HostPathVolumeSource) {
	orDefaultPtr(&h.Type, corev1.HostPathUnset)
}

func rbd(pool, user, keyring *string) {
	orDefault(pool, "rbd")
	orDefault(user, "admin")
	orDefault(keyring, "/etc/ceph/keyring")
}

func azureDisk(a *corev1.AzureDiskVolumeSource) {
	orDefaultPtr(&a.CachingMode, corev1.AzureDataDiskCachingReadWrite)
	orDefaultPtr(&a.Kind, corev1.AzureSharedBlobDisk)
	orDefaultPtr(&a.FSType, "ext4")
	orDefaultPtr(&a.ReadOnly, false)
}

func scaleIO(storageMode, fsType *string) {
	orDefault(storageMode, "ThinProvisioned")
	orDefault(fsType, "xfs")
}
