package validation

import (
	"fmt"
	"path"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedHostPathTypes = sets.New(
	corev1.HostPathUnset,
	corev1.HostPathDirectoryOrCreate,
	corev1.HostPathDirectory,
	corev1.HostPathFileOrCreate,
	corev1.HostPathFile,
	corev1.HostPathSocket,
	corev1.HostPathCharDev,
	corev1.HostPathBlockDev,
)

// Downward API paths a volume file may expose; labels and annotations are
// whole files here, while environment variables need a subscript.
var validVolumeDownwardAPIFieldPaths = sets.New(
	"metadata.name",
	"metadata.namespace",
	"metadata.labels",
	"metadata.annotations",
	"metadata.uid",
)

var validEnvDownwardAPIFieldPaths = sets.New(
	"metadata.name",
	"metadata.namespace",
	"metadata.uid",
	"spec.nodeName",
	"spec.serviceAccountName",
	"status.hostIP",
	"status.hostIPs",
	"status.podIP",
	"status.podIPs",
)

var validContainerResourceFieldPaths = sets.New(
	"limits.cpu",
	"limits.memory",
	"limits.ephemeral-storage",
	"requests.cpu",
	"requests.memory",
	"requests.ephemeral-storage",
)

var (
	cpuDivisors    = sets.New("1m", "1")
	memoryDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

// validateVolumes checks the pod's volumes and returns the valid ones by
// name, which is what container mounts are resolved against.
func validateVolumes(volumes []corev1.Volume, podName string, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var allErrs field.ErrorList
	// Ephemeral volumes create a claim named <pod>-<volume>; another volume
	// referring to that claim by name would race its creation.
	createdClaims := sets.New[string]()
	if podName != "" {
		for _, vol := range volumes {
			if vol.Ephemeral != nil {
				createdClaims.Insert(podName + "-" + vol.Name)
			}
		}
	}
	vols := map[string]corev1.VolumeSource{}
	for i, vol := range volumes {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		errs := validateVolumeSource(&vol.VolumeSource, vol.Name, podName, idxPath)
		if vol.Name == "" {
			errs = append(errs, field.Required(namePath, ""))
		} else {
			errs = append(errs, validateDNS1123Label(vol.Name, namePath)...)
		}
		if _, dup := vols[vol.Name]; dup {
			errs = append(errs, field.Duplicate(namePath, vol.Name))
		}
		if len(errs) == 0 {
			vols[vol.Name] = vol.VolumeSource
		}
		allErrs = append(allErrs, errs...)
		if vol.PersistentVolumeClaim != nil && createdClaims.Has(vol.PersistentVolumeClaim.ClaimName) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("persistentVolumeClaim", "claimName"), vol.PersistentVolumeClaim.ClaimName,
				"must not reference a PVC that gets created for an ephemeral volume"))
		}
	}
	return vols, allErrs
}

func validateVolumeSource(src *corev1.VolumeSource, volName, podName string, fldPath *field.Path) field.ErrorList {
	name, value, allErrs := exactlyOneSource(reflect.ValueOf(src).Elem(), fldPath)
	if value == nil {
		return allErrs
	}
	srcPath := fldPath.Child(name)
	switch s := value.(type) {
	case *corev1.EmptyDirVolumeSource:
		if s.SizeLimit != nil && s.SizeLimit.Sign() < 0 {
			allErrs = append(allErrs, field.Forbidden(srcPath.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case *corev1.HostPathVolumeSource:
		allErrs = append(allErrs, validateHostPathVolumeSource(s, srcPath)...)
	case *corev1.GitRepoVolumeSource:
		allErrs = append(allErrs, requireString(s.Repository, srcPath.Child("repository"))...)
		allErrs = append(allErrs, validateLocalDescendingPath(s.Directory, srcPath.Child("directory"))...)
	case *corev1.SecretVolumeSource:
		allErrs = append(allErrs, requireString(s.SecretName, srcPath.Child("secretName"))...)
		allErrs = append(allErrs, validateFileMode(s.DefaultMode, srcPath.Child("defaultMode"))...)
		allErrs = append(allErrs, validateKeyToPaths(s.Items, srcPath.Child("items"))...)
	case *corev1.ConfigMapVolumeSource:
		allErrs = append(allErrs, requireString(s.Name, srcPath.Child("name"))...)
		allErrs = append(allErrs, validateFileMode(s.DefaultMode, srcPath.Child("defaultMode"))...)
		allErrs = append(allErrs, validateKeyToPaths(s.Items, srcPath.Child("items"))...)
	case *corev1.PersistentVolumeClaimVolumeSource:
		allErrs = append(allErrs, requireString(s.ClaimName, srcPath.Child("claimName"))...)
	case *corev1.NFSVolumeSource:
		allErrs = append(allErrs, validateNFSVolumeSource(s, srcPath)...)
	case *corev1.DownwardAPIVolumeSource:
		allErrs = append(allErrs, validateFileMode(s.DefaultMode, srcPath.Child("defaultMode"))...)
		for i := range s.Items {
			allErrs = append(allErrs, validateDownwardAPIVolumeFile(&s.Items[i], srcPath.Child("items").Index(i))...)
		}
	case *corev1.ProjectedVolumeSource:
		allErrs = append(allErrs, validateFileMode(s.DefaultMode, srcPath.Child("defaultMode"))...)
		allErrs = append(allErrs, validateProjectionSources(s.Sources, srcPath)...)
	case *corev1.CSIVolumeSource:
		allErrs = append(allErrs, validateCSIDriverName(s.Driver, srcPath.Child("driver"))...)
		if s.NodePublishSecretRef != nil {
			refPath := srcPath.Child("nodePublishSecretRef", "name")
			if s.NodePublishSecretRef.Name == "" {
				allErrs = append(allErrs, field.Required(refPath, ""))
			} else {
				allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, s.NodePublishSecretRef.Name, refPath)...)
			}
		}
	case *corev1.EphemeralVolumeSource:
		allErrs = append(allErrs, validateEphemeralVolumeSource(s, volName, podName, srcPath)...)
	case *corev1.ImageVolumeSource:
		allErrs = append(allErrs, requireString(s.Reference, srcPath.Child("reference"))...)
		allErrs = append(allErrs, validatePullPolicy(s.PullPolicy, srcPath.Child("pullPolicy"))...)
	default:
		allErrs = append(allErrs, validateLegacyPluginSource(value, srcPath)...)
	}
	return allErrs
}

func validateEphemeralVolumeSource(s *corev1.EphemeralVolumeSource, volName, podName string, fldPath *field.Path) field.ErrorList {
	tmplPath := fldPath.Child("volumeClaimTemplate")
	if s.VolumeClaimTemplate == nil {
		return field.ErrorList{field.Required(tmplPath, "")}
	}
	allErrs := validateClaimTemplateMeta(&s.VolumeClaimTemplate.ObjectMeta, tmplPath.Child("metadata"))
	allErrs = append(allErrs, validatePersistentVolumeClaimSpec(&s.VolumeClaimTemplate.Spec, tmplPath.Child("spec"))...)
	if podName != "" && volName != "" {
		claimName := podName + "-" + volName
		for _, msg := range apivalidation.NameIsDNSSubdomain(claimName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), volName, fmt.Sprintf("PVC name %q: %v", claimName, msg)))
		}
	}
	return allErrs
}

func validateHostPathVolumeSource(s *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if s.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	allErrs := validatePathNoBacksteps(s.Path, fldPath.Child("path"))
	if s.Type != nil && !supportedHostPathTypes.Has(*s.Type) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), *s.Type, sets.List(supportedHostPathTypes)))
	}
	return allErrs
}

func validateNFSVolumeSource(s *corev1.NFSVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := requireString(s.Server, fldPath.Child("server"))
	return append(errs, validateNFSExport(s.Path, fldPath.Child("path"))...)
}

// validateNFSExport: an export is named by its absolute path on the server.
func validateNFSExport(export string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if export == "" {
		errs = append(errs, field.Required(fldPath, ""))
	}
	if !path.IsAbs(export) {
		errs = append(errs, field.Invalid(fldPath, export, "must be an absolute path"))
	}
	return errs
}

func validateCSIDriverName(driver string, fldPath *field.Path) field.ErrorList {
	if driver == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	if len(driver) > 63 {
		allErrs = append(allErrs, field.TooLong(fldPath, "", 63))
	}
	for _, msg := range apivalidation.NameIsDNSSubdomain(strings.ToLower(driver), false) {
		allErrs = append(allErrs, field.Invalid(fldPath, driver, msg))
	}
	return allErrs
}

func validateKeyToPaths(items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, kp := range items {
		allErrs = append(allErrs, validateKeyToPath(kp, fldPath.Index(i))...)
	}
	return allErrs
}

func validateKeyToPath(kp corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	allErrs := requireString(kp.Key, fldPath.Child("key"))
	allErrs = append(allErrs, requireString(kp.Path, fldPath.Child("path"))...)
	allErrs = append(allErrs, validateLocalNonReservedPath(kp.Path, fldPath.Child("path"))...)
	return append(allErrs, validateFileMode(kp.Mode, fldPath.Child("mode"))...)
}

// validateDownwardAPIVolumeFile: a file shows either a field of the pod or
// a resource of one of its containers; given both, the field is checked and
// the pair refused.
func validateDownwardAPIVolumeFile(file *corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	errs := requireString(file.Path, fldPath.Child("path"))
	errs = append(errs, validateLocalNonReservedPath(file.Path, fldPath.Child("path"))...)
	byField, byResource := file.FieldRef != nil, file.ResourceFieldRef != nil
	if byField {
		errs = append(errs, validateObjectFieldSelector(file.FieldRef, validVolumeDownwardAPIFieldPaths, fldPath.Child("fieldRef"))...)
	} else if byResource {
		errs = append(errs, validateResourceFieldSelector(file.ResourceFieldRef, true, fldPath.Child("resourceFieldRef"))...)
	}
	switch {
	case byField && byResource:
		errs = append(errs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
	case !byField && !byResource:
		errs = append(errs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateFileMode(file.Mode, fldPath.Child("mode"))...)
}

// validateObjectFieldSelector checks a downward API field reference. Only
// v1 field paths exist; labels and annotations may be subscripted by key.
func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, allowed sets.Set[string], fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	if p, subscript, ok := splitSubscriptedPath(fs.FieldPath); ok {
		switch p {
		case "metadata.annotations":
			return validateQualifiedName(strings.ToLower(subscript), fldPath)
		case "metadata.labels":
			return validateQualifiedName(subscript, fldPath)
		default:
			return field.ErrorList{field.Invalid(fldPath, p, "does not support subscript")}
		}
	}
	if !allowed.Has(fs.FieldPath) {
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), fs.FieldPath, sets.List(allowed))}
	}
	return nil
}

// splitSubscriptedPath splits "metadata.labels['key']" into its path and key.
func splitSubscriptedPath(fieldPath string) (string, string, bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return "", "", false
	}
	p, subscript, ok := strings.Cut(strings.TrimSuffix(fieldPath, "']"), "['")
	if !ok || len(subscript) == 0 {
		return "", "", false
	}
	return p, subscript, true
}

// validateResourceFieldSelector checks a reference to a container's
// resources; volumes must name the container, env vars default to their own.
func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, volume bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case volume && fs.ContainerName == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("resource"), ""))
	case !validContainerResourceFieldPaths.Has(fs.Resource) &&
		!strings.HasPrefix(fs.Resource, "requests.hugepages-") && !strings.HasPrefix(fs.Resource, "limits.hugepages-"):
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("resource"), fs.Resource, sets.List(validContainerResourceFieldPaths)))
	}
	if fs.Divisor.IsZero() {
		return allErrs
	}
	divisors, kind := memoryDivisors, ""
	switch {
	case fs.Resource == "limits.cpu" || fs.Resource == "requests.cpu":
		divisors, kind = cpuDivisors, "cpu"
	case fs.Resource == "limits.memory" || fs.Resource == "requests.memory":
		kind = "memory"
	case fs.Resource == "limits.ephemeral-storage" || fs.Resource == "requests.ephemeral-storage":
		kind = "local ephemeral storage"
	case strings.Contains(fs.Resource, "hugepages-"):
		kind = "hugepages"
	}
	if kind != "" && !divisors.Has(fs.Divisor.String()) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("divisor"), fs.Resource,
			fmt.Sprintf("only divisor's values %s are supported with the %s resource", strings.Join(sets.List(divisors), ", "), kind)))
	}
	return allErrs
}

// validateProjectionSources checks a projected volume: one source per item,
// and no two items writing the same file.
func validateProjectionSources(sources []corev1.VolumeProjection, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allPaths := sets.New[string]()
	addPath := func(p string, owner string) {
		if p == "" {
			return
		}
		if allPaths.Has(p) {
			allErrs = append(allErrs, field.Invalid(fldPath, owner, "conflicting duplicate paths"))
		}
		allPaths.Insert(p)
	}
	for i, src := range sources {
		srcPath := fldPath.Child("sources").Index(i)
		numSources := 0
		if s := src.Secret; s != nil {
			numSources++
			p := srcPath.Child("secret")
			allErrs = append(allErrs, requireString(s.Name, p.Child("name"))...)
			for j, kp := range s.Items {
				allErrs = append(allErrs, validateKeyToPath(kp, p.Child("items").Index(j))...)
				addPath(kp.Path, s.Name)
			}
		}
		if s := src.ConfigMap; s != nil {
			numSources++
			p := srcPath.Child("configMap")
			allErrs = append(allErrs, requireString(s.Name, p.Child("name"))...)
			for j, kp := range s.Items {
				allErrs = append(allErrs, validateKeyToPath(kp, p.Child("items").Index(j))...)
				addPath(kp.Path, s.Name)
			}
		}
		if s := src.DownwardAPI; s != nil {
			numSources++
			p := srcPath.Child("downwardAPI")
			for j := range s.Items {
				allErrs = append(allErrs, validateDownwardAPIVolumeFile(&s.Items[j], p.Child("items").Index(j))...)
				addPath(s.Items[j].Path, s.Items[j].Path)
			}
		}
		if s := src.ServiceAccountToken; s != nil {
			numSources++
			allErrs = append(allErrs, validateServiceAccountTokenProjection(s, srcPath.Child("serviceAccountToken"))...)
		}
		if s := src.ClusterTrustBundle; s != nil {
			numSources++
			allErrs = append(allErrs, validateClusterTrustBundleProjection(s, srcPath.Child("clusterTrustBundle"))...)
			addPath(s.Path, s.Path)
		}
		if s := src.PodCertificate; s != nil {
			numSources++
			allErrs = append(allErrs, requireString(s.SignerName, srcPath.Child("podCertificate", "signerName"))...)
		}
		switch {
		case numSources == 0:
			allErrs = append(allErrs, field.Required(srcPath, "must specify exactly one volume type per source"))
		case numSources > 1:
			allErrs = append(allErrs, field.Forbidden(srcPath, "may not specify more than 1 volume type per source"))
		}
	}
	return allErrs
}

// validateServiceAccountTokenProjection bounds token lifetimes: the kubelet
// refreshes tokens at 80% of their life, so very short ones would thrash,
// and the TokenRequest API caps expirations at 2^32 seconds.
func validateServiceAccountTokenProjection(s *corev1.ServiceAccountTokenProjection, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.ExpirationSeconds != nil {
		if *s.ExpirationSeconds < 10*60 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("expirationSeconds"), *s.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
		}
		if *s.ExpirationSeconds > 1<<32 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("expirationSeconds"), *s.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	if s.Path == "" {
		return append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	return append(allErrs, validateLocalNonReservedPath(s.Path, fldPath.Child("path"))...)
}

func validateClusterTrustBundleProjection(s *corev1.ClusterTrustBundleProjection, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case s.Name != nil && s.SignerName != nil:
		allErrs = append(allErrs, field.Invalid(fldPath, s, "only one of name and signerName may be used"))
	case s.Name != nil:
		if *s.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("name"), "must be a valid object name"))
		}
		if s.LabelSelector != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("labelSelector"), s.LabelSelector, "labelSelector must be unset if name is specified"))
		}
	case s.SignerName != nil:
		if *s.SignerName == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("signerName"), "must be a valid signer name"))
		}
		allErrs = append(allErrs, validateLabelSelector(s.LabelSelector, fldPath.Child("labelSelector"))...)
	default:
		allErrs = append(allErrs, field.Required(fldPath, "either name or signerName must be specified"))
	}
	allErrs = append(allErrs, requireString(s.Path, fldPath.Child("path"))...)
	return append(allErrs, validateLocalNonReservedPath(s.Path, fldPath.Child("path"))...)
}

// validateLegacyPluginSource covers the in-tree volume plugins that upstream
// still accepts for compatibility: it only checks the fields each plugin
// cannot work without.
func validateLegacyPluginSource(value any, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	req := func(v string, name string) {
		allErrs = append(allErrs, requireString(v, fldPath.Child(name))...)
	}
	partition := func(p int32) {
		if p < 0 || p > 255 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("partition"), p, "must be between 1 and 255, inclusive"))
		}
	}
	switch s := value.(type) {
	case *corev1.GCEPersistentDiskVolumeSource:
		req(s.PDName, "pdName")
		partition(s.Partition)
	case *corev1.AWSElasticBlockStoreVolumeSource:
		req(s.VolumeID, "volumeID")
		partition(s.Partition)
	case *corev1.ISCSIVolumeSource:
		req(s.TargetPortal, "targetPortal")
		req(s.IQN, "iqn")
		allErrs = append(allErrs, validateLun(s.Lun, fldPath)...)
	case *corev1.ISCSIPersistentVolumeSource:
		req(s.TargetPortal, "targetPortal")
		req(s.IQN, "iqn")
		allErrs = append(allErrs, validateLun(s.Lun, fldPath)...)
	case *corev1.GlusterfsVolumeSource:
		req(s.EndpointsName, "endpoints")
		req(s.Path, "path")
	case *corev1.GlusterfsPersistentVolumeSource:
		req(s.EndpointsName, "endpoints")
		req(s.Path, "path")
	case *corev1.RBDVolumeSource:
		if len(s.CephMonitors) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("monitors"), ""))
		}
		req(s.RBDImage, "image")
	case *corev1.RBDPersistentVolumeSource:
		if len(s.CephMonitors) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("monitors"), ""))
		}
		req(s.RBDImage, "image")
	case *corev1.FlexVolumeSource:
		req(s.Driver, "driver")
	case *corev1.FlexPersistentVolumeSource:
		req(s.Driver, "driver")
	case *corev1.CinderVolumeSource:
		req(s.VolumeID, "volumeID")
	case *corev1.CinderPersistentVolumeSource:
		req(s.VolumeID, "volumeID")
	case *corev1.CephFSVolumeSource:
		if len(s.Monitors) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("monitors"), ""))
		}
	case *corev1.CephFSPersistentVolumeSource:
		if len(s.Monitors) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("monitors"), ""))
		}
	case *corev1.FlockerVolumeSource:
		if (s.DatasetName == "") == (s.DatasetUUID == "") {
			allErrs = append(allErrs, field.Required(fldPath, "exactly one of datasetName and datasetUUID is required"))
		}
	case *corev1.FCVolumeSource:
		allErrs = append(allErrs, validateFCVolumeSource(s, fldPath)...)
	case *corev1.AzureFileVolumeSource:
		req(s.SecretName, "secretName")
		req(s.ShareName, "shareName")
	case *corev1.AzureFilePersistentVolumeSource:
		req(s.SecretName, "secretName")
		req(s.ShareName, "shareName")
	case *corev1.AzureDiskVolumeSource:
		req(s.DiskName, "diskName")
		req(s.DataDiskURI, "diskURI")
	case *corev1.VsphereVirtualDiskVolumeSource:
		req(s.VolumePath, "volumePath")
	case *corev1.PhotonPersistentDiskVolumeSource:
		req(s.PdID, "pdID")
	case *corev1.PortworxVolumeSource:
		req(s.VolumeID, "volumeID")
	case *corev1.QuobyteVolumeSource:
		req(s.Registry, "registry")
		req(s.Volume, "volume")
	case *corev1.ScaleIOVolumeSource:
		req(s.Gateway, "gateway")
		req(s.System, "system")
		req(s.VolumeName, "volumeName")
	case *corev1.ScaleIOPersistentVolumeSource:
		req(s.Gateway, "gateway")
		req(s.System, "system")
		req(s.VolumeName, "volumeName")
	case *corev1.StorageOSVolumeSource:
		req(s.VolumeName, "volumeName")
	case *corev1.StorageOSPersistentVolumeSource:
		req(s.VolumeName, "volumeName")
	}
	return allErrs
}

// validateFCVolumeSource: a Fibre Channel disk is named either by target
// WWNs and a LUN, or by WWIDs.
func validateFCVolumeSource(s *corev1.FCVolumeSource, fldPath *field.Path) field.ErrorList {
	byTarget, byWWID := len(s.TargetWWNs) != 0, len(s.WWIDs) != 0
	var errs field.ErrorList
	switch {
	case !byTarget && !byWWID:
		errs = append(errs, field.Required(fldPath.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
	case byTarget && byWWID:
		errs = append(errs, field.Invalid(fldPath.Child("targetWWNs"), s.TargetWWNs, "targetWWNs and wwids can not be specified simultaneously"))
	}
	if !byTarget {
		return errs
	}
	if s.Lun == nil {
		return append(errs, field.Required(fldPath.Child("lun"), "lun is required if targetWWNs is specified"))
	}
	return append(errs, validateLun(*s.Lun, fldPath)...)
}

func validateLun(lun int32, fldPath *field.Path) field.ErrorList {
	if lun < 0 || lun > 255 {
		return field.ErrorList{field.Invalid(fldPath.Child("lun"), lun, "must be between 0 and 255, inclusive")}
	}
	return nil
}
