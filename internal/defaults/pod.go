package defaults

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Pod defaults a pod as upstream does on decode. serviceAccountName is left alone: the
// ServiceAccount admission plugin sets it later, and only for pods that are being created.
func Pod(p *corev1.Pod) {
	// Only pods (not pod templates) get requests from limits, so templates keep round-tripping
	// unchanged through controllers.
	requestsFromLimits(p.Spec.Containers)
	requestsFromLimits(p.Spec.InitContainers)
	if p.Spec.EnableServiceLinks == nil {
		p.Spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
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
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range s.Volumes {
		volume(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		container(&s.InitContainers[i])
	}
	for i := range s.Containers {
		container(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		container((*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon))
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
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		if from == nil {
			continue
		}
		if from.FieldRef != nil {
			fieldSelector(from.FieldRef)
		}
		if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
			from.FileKeyRef.Optional = ptr.To(false)
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
	if f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func probe(p *corev1.Probe) {
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if p.HTTPGet != nil {
		httpGet(p.HTTPGet)
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

func httpGet(h *corev1.HTTPGetAction) {
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
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
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		downwardAPIItems(src.DownwardAPI.Items)
	}
	if src.Projected != nil {
		projected(src.Projected)
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
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
	if p.DefaultMode == nil {
		p.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
	}
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.DownwardAPI != nil {
			downwardAPIItems(s.DownwardAPI.Items)
		}
		if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
			s.ServiceAccountToken.ExpirationSeconds = ptr.To(int64(time.Hour / time.Second))
		}
	}
}

func hostPath(h *corev1.HostPathVolumeSource) {
	if h.Type == nil {
		h.Type = ptr.To(corev1.HostPathUnset)
	}
}

func rbd(pool, user, keyring *string) {
	if *pool == "" {
		*pool = "rbd"
	}
	if *user == "" {
		*user = "admin"
	}
	if *keyring == "" {
		*keyring = "/etc/ceph/keyring"
	}
}

func azureDisk(a *corev1.AzureDiskVolumeSource) {
	if a.CachingMode == nil {
		a.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
	}
	if a.Kind == nil {
		a.Kind = ptr.To(corev1.AzureSharedBlobDisk)
	}
	if a.FSType == nil {
		a.FSType = ptr.To("ext4")
	}
	if a.ReadOnly == nil {
		a.ReadOnly = ptr.To(false)
	}
}

func scaleIO(storageMode, fsType *string) {
	if *storageMode == "" {
		*storageMode = "ThinProvisioned"
	}
	if *fsType == "" {
		*fsType = "xfs"
	}
}
