package volumes

import (
	"io/fs"

	corev1 "k8s.io/api/core/v1"

	"github.com/idplane/idplane/internal/agent/atomicwriter"
	"github.com/idplane/idplane/internal/podwalk"
)

// ownership is what a pod's security context says about the owners of its volumes' files.
type ownership struct {
	fsGroup *int64 // pod securityContext.fsGroup
	fsUser  *int64 // the runAsUser every init and regular container shares, if any
}

// groupRead is what fsGroup adds to every file: the kubelet's walk over a read-only volume
// ORs r--r----- into each file's mode and gives it the group.
const groupRead = fs.FileMode(0o440)

func podOwnership(pod *corev1.Pod) ownership {
	var o ownership
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		g := *sc.FSGroup
		o.fsGroup = &g
	}
	o.fsUser = sharedRunAsUser(pod)
	return o
}

// sharedRunAsUser is the effective runAsUser (the container's, else the pod's) when every
// init and regular container has one and they are all the same. Ephemeral containers do not
// count: they come after the volume is written. A user an image declares is not known here
// and does not count either.
func sharedRunAsUser(pod *corev1.Pod) *int64 {
	var shared *int64
	for c := range podwalk.Containers(&pod.Spec) {
		if c.Kind == podwalk.EphemeralContainer {
			continue
		}
		u := effectiveRunAsUser(pod, c.Container)
		if u == nil || (shared != nil && *shared != *u) {
			return nil
		}
		shared = u
	}
	return shared
}

func effectiveRunAsUser(pod *corev1.Pod, c *corev1.Container) *int64 {
	var u *int64
	if sc := pod.Spec.SecurityContext; sc != nil && sc.RunAsUser != nil {
		u = sc.RunAsUser
	}
	if sc := c.SecurityContext; sc != nil && sc.RunAsUser != nil {
		u = sc.RunAsUser
	}
	if u == nil {
		return nil
	}
	v := *u
	return &v
}

// token is the file of a projected service-account token, by the design's heuristics: with
// fsGroup it is 0600 and the fsGroup pass below makes it 0640 in that group; else, when all
// containers share a runAsUser, it is 0600 owned by that user; else it has the volume's mode.
func (o ownership) token(data []byte, mode fs.FileMode) atomicwriter.FileProjection {
	f := atomicwriter.FileProjection{Data: data, Mode: mode}
	switch {
	case o.fsGroup != nil:
		f.Mode = 0o600
	case o.fsUser != nil:
		f.Mode = 0o600
		uid := *o.fsUser
		f.UID = &uid
	}
	return f
}

// applyFSGroup gives every file of the volume the pod's fsGroup and group read.
func (o ownership) applyFSGroup(files map[string]atomicwriter.FileProjection) {
	if o.fsGroup == nil {
		return
	}
	for p, f := range files {
		gid := *o.fsGroup
		f.GID = &gid
		f.Mode |= groupRead
		files[p] = f
	}
}
