package validation

import (
	"bytes"
	"encoding/json"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateSecret validates a secret on create. stringData is a write-only
// convenience merged into data on storage, so its keys are checked where the
// client wrote them and its values count towards the data rules and size.
func ValidateSecret(s *corev1.Secret) field.ErrorList {
	allErrs := validateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))

	dataPath := field.NewPath("data")
	for key := range s.Data {
		allErrs = append(allErrs, validateConfigKey(key, dataPath.Key(key))...)
	}
	for key := range s.StringData {
		allErrs = append(allErrs, validateConfigKey(key, field.NewPath("stringData").Key(key))...)
	}
	data := effectiveSecretData(s)
	totalSize := 0
	for _, v := range data {
		totalSize += len(v)
	}
	if totalSize > maxSecretSize {
		allErrs = append(allErrs, field.TooLong(dataPath, "", maxSecretSize))
	}
	return append(allErrs, validateSecretType(s, data)...)
}

// ValidateSecretUpdate validates an update of a secret. The type never
// changes, and an immutable secret keeps its data and its immutability.
func ValidateSecretUpdate(newS, oldS *corev1.Secret) field.ErrorList {
	allErrs := validateObjectMetaUpdate(&newS.ObjectMeta, &oldS.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(newS.Type, oldS.Type, field.NewPath("type"))...)
	if oldS.Immutable != nil && *oldS.Immutable {
		if newS.Immutable == nil || !*newS.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), immutableWhenSetMsg))
		}
		if !maps.EqualFunc(effectiveSecretData(newS), effectiveSecretData(oldS), bytes.Equal) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), immutableWhenSetMsg))
		}
	}
	return append(allErrs, ValidateSecret(newS)...)
}

// effectiveSecretData is the data the secret will hold once stringData has
// been merged in; stringData wins on conflicts, as upstream.
func effectiveSecretData(s *corev1.Secret) map[string][]byte {
	if len(s.StringData) == 0 {
		return s.Data
	}
	data := make(map[string][]byte, len(s.Data)+len(s.StringData))
	maps.Copy(data, s.Data)
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return data
}

// validateSecretType enforces the keys that consumers of the well-known
// secret types rely on.
func validateSecretType(s *corev1.Secret, data map[string][]byte) field.ErrorList {
	var allErrs field.ErrorList
	dataPath := field.NewPath("data")
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		// The token and uid are filled in later by the token controller;
		// only the owning service account must be named up front.
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		allErrs = append(allErrs, validateJSONKey(data, corev1.DockerConfigKey, dataPath)...)
	case corev1.SecretTypeDockerConfigJson:
		allErrs = append(allErrs, validateJSONKey(data, corev1.DockerConfigJsonKey, dataPath)...)
	case corev1.SecretTypeBasicAuth:
		_, hasUser := data[corev1.BasicAuthUsernameKey]
		_, hasPassword := data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPassword {
			allErrs = append(allErrs,
				field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(data[corev1.SSHAuthPrivateKey]) == 0 {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		if _, ok := data[corev1.TLSCertKey]; !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.TLSCertKey), ""))
		}
		if _, ok := data[corev1.TLSPrivateKeyKey]; !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.TLSPrivateKeyKey), ""))
		}
	}
	return allErrs
}

func validateJSONKey(data map[string][]byte, key string, dataPath *field.Path) field.ErrorList {
	raw, ok := data[key]
	if !ok {
		return field.ErrorList{field.Required(dataPath.Key(key), "")}
	}
	if err := json.Unmarshal(raw, &map[string]any{}); err != nil {
		return field.ErrorList{field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error())}
	}
	return nil
}

// validateConfigKey: secret and configmap keys become file names when
// projected into a volume.
func validateConfigKey(key string, fldPath *field.Path) field.ErrorList {
	return invalidEach(fldPath, key, utilvalidation.IsConfigMapKey(key))
}
