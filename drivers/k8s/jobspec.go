package k8s

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"svc/drivers"
	"svc/internal/platform/derrors"
)

// RuntimeOptions are the job settings of a k8s runtime (interface spec
// §2.6): the caller fills them from the RuntimeSpec. How to reach the
// cluster, and its namespace, are in Config.
type RuntimeOptions struct {
	// Image is the runtime's default image; a Job's Image wins.
	Image string
	// RuntimeClass is the pod's runtimeClassName (gVisor, Kata...); empty
	// leaves the cluster's default.
	RuntimeClass string
	// NodeSelector and Tolerations place the pod.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// GPU is the number of nvidia.com/gpu reserved per job unless the
	// harness says.
	GPU int
}

// JobOptions are the resources a harness (or its case) declares,
// `resources` in the spec: the caller fills them per job.
type JobOptions struct {
	// CPUMillicores is the declared CPU, requested and limited; 0 leaves
	// the namespace's defaults.
	CPUMillicores int
	// MemoryMB is the declared memory (MiB), requested and limited.
	MemoryMB int
	// GPU, when set, is the harness's resources.gpu, which wins over
	// RuntimeOptions.GPU.
	GPU *int
}

// Names inside the pod, and the files the contract variables point at.
const (
	harnessContainer = "harness"
	// traceContainer is the native sidecar that prints the trace file to
	// its log when the harness has ended: Kubernetes has no API to read a
	// file of a finished container, and its log is readable through
	// pods/log like the harness's (see docs/runtimes.md).
	traceContainer = "svc-trace"
	// setupContainer copies the harness's files into the writable work
	// directory before the harness starts (a ConfigMap volume is read-only).
	setupContainer = "svc-setup"

	inputDir   = "/svc/in"
	workDir    = "/svc/work"
	dataDir    = "/svc/data"
	secretsDir = "/svc/secrets"

	caseKey     = "case.json"
	secretsKey  = "svc-secrets.json"
	caseFile    = inputDir + "/" + caseKey
	secretsFile = secretsDir + "/" + secretsKey
	traceFile   = dataDir + "/svc-trace.jsonl"

	gpuResource = corev1.ResourceName("nvidia.com/gpu")
)

// Labels and annotations the driver sets. A Job found under a driver's
// name without the run's annotation is not adopted.
const (
	// LabelJob is on the Job, its pod (through the template), its Secret
	// and its ConfigMap: the pod is found by it, and an operator can list
	// everything of one attempt with it.
	LabelJob        = "svc/job"
	labelManagedBy  = "app.kubernetes.io/managed-by"
	managedBy       = "svc"
	annotationRunID = "svc/run-id"
	annotationTry   = "svc/attempt"
)

// maxInput is the largest case plus files the driver puts in the input
// ConfigMap: Kubernetes refuses an object over 1 MiB, and etcd's request
// limit is near it.
const maxInput = 900 << 10

// JobName is the Kubernetes Job name of attempt attempt of run runID: the
// same for every Run of that attempt, so that a retried activity finds the
// Job it created. Kubernetes names are lower-case DNS labels (and the Job
// controller copies the name into a label, at most 63 bytes); a run id
// that is not already one is lowered, cleaned, cut and suffixed with a
// digest of the original, so two runs never share a Job.
func JobName(runID string, attempt int) string {
	const maxBase = 40 // "svc-" + base + "-" + 10 hex + "-a" + attempt stays under 63
	var b strings.Builder
	safe := runID != "" && len(runID) <= maxBase
	for i := 0; i < len(runID); i++ {
		c := runID[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '-' && i > 0 && i < len(runID)-1:
		case 'A' <= c && c <= 'Z':
			safe = false
			c += 'a' - 'A'
		default:
			safe = false
			c = '-'
		}
		if b.Len() < maxBase {
			b.WriteByte(c)
		}
	}
	name := strings.Trim(b.String(), "-")
	if !safe {
		sum := sha256.Sum256([]byte(runID))
		if name != "" {
			name += "-"
		}
		name += hex.EncodeToString(sum[:5])
	}
	return "svc-" + name + "-a" + strconv.Itoa(attempt)
}

// SecretName is the Secret holding the harness's secrets of Job job.
func SecretName(job string) string { return job + "-secrets" }

// InputName is the ConfigMap holding the case and the files of Job job.
func InputName(job string) string { return job + "-input" }

// spec is what one attempt creates.
type spec struct {
	job   *batchv1.Job
	input *corev1.ConfigMap
	image string
}

// jobSpec builds the Job of attempt j: one pod, never restarted or
// retried (backoffLimit 0), so that one attempt is one run of the
// harness. Secret values are not in it: the pod mounts the Secret
// SecretName(name), created beside it (see Driver.Run).
func (d *Driver) jobSpec(name string, j drivers.Job) (spec, error) {
	image := j.Image
	if image == "" {
		image = d.rt.Image
	}
	if image == "" {
		return spec{}, derrors.Invalidf("k8s runtime: neither the harness nor the runtime names an image; set the runtime's image or the harness's")
	}
	res, err := d.resources()
	if err != nil {
		return spec{}, err
	}

	input := &corev1.ConfigMap{
		ObjectMeta: d.meta(InputName(name), name, j),
		Data:       map[string]string{caseKey: string(j.Case)},
	}
	inputItems := []corev1.KeyToPath{{Key: caseKey, Path: caseKey, Mode: ptr(int32(0o444))}}
	names := make([]string, 0, len(j.Files))
	for n := range j.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	size := len(j.Case)
	for i, n := range names {
		key := "file-" + strconv.Itoa(i)
		content := j.Files[n]
		size += len(content)
		input.Data[key] = content
		mode := int32(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		inputItems = append(inputItems, corev1.KeyToPath{Key: key, Path: path.Join("files", path.Clean(n)), Mode: &mode})
	}
	if size > maxInput {
		return spec{}, derrors.Invalidf("k8s runtime: the case and its files are %d bytes, more than the %d a Kubernetes ConfigMap can carry; make the case smaller", size, maxInput)
	}

	volumes := []corev1.Volume{
		{Name: "svc-input", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: InputName(name)}, Items: inputItems,
		}}},
		{Name: "svc-work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "svc-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "svc-input", MountPath: inputDir, ReadOnly: true},
		{Name: "svc-work", MountPath: workDir},
		{Name: "svc-data", MountPath: dataDir},
	}
	if len(j.Secrets) > 0 {
		// Mode 0444 inside the pod: the volume's files are root's, and a
		// harness image running as another user must read them; nothing
		// but this pod mounts the Secret.
		volumes = append(volumes, corev1.Volume{Name: "svc-secrets", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: SecretName(name), DefaultMode: ptr(int32(0o444)),
			Items: []corev1.KeyToPath{{Key: secretsKey, Path: secretsKey}},
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "svc-secrets", MountPath: secretsDir, ReadOnly: true})
	} else {
		input.Data[secretsKey] = "{}"
		inputItems = append(inputItems, corev1.KeyToPath{Key: secretsKey, Path: secretsKey})
		volumes[0].ConfigMap.Items = inputItems
		mounts = append(mounts, corev1.VolumeMount{Name: "svc-input", MountPath: secretsFile, SubPath: secretsKey, ReadOnly: true})
	}

	helperRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	var inits []corev1.Container
	if len(names) > 0 {
		inits = append(inits, corev1.Container{
			Name: setupContainer, Image: d.helperImage,
			Command:      []string{"sh", "-c", "cp -RL " + inputDir + "/files/. " + workDir + "/"},
			VolumeMounts: mounts[:2], Resources: helperRes,
		})
	}
	inits = append(inits, corev1.Container{
		Name: traceContainer, Image: d.helperImage,
		// A native sidecar: it runs beside the harness and is sent SIGTERM
		// once the harness has ended, whereupon it prints the trace file.
		RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
		Command:       []string{"sh", "-c", traceScript},
		VolumeMounts:  []corev1.VolumeMount{{Name: "svc-data", MountPath: dataDir, ReadOnly: true}},
		Resources:     helperRes,
	})

	harness := corev1.Container{
		Name:         harnessContainer,
		Image:        image,
		Command:      escapeAll(j.Command[:1]),
		Args:         escapeAll(j.Command[1:]),
		Env:          d.environment(j),
		WorkingDir:   path.Join(workDir, j.WorkDir),
		VolumeMounts: mounts,
		Resources:    res,
		// The harness's last words on a failure are in its stderr, not a file.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	grace := int64(math.Ceil(d.killGrace.Seconds()))
	pod := corev1.PodSpec{
		RestartPolicy:  corev1.RestartPolicyNever,
		InitContainers: inits,
		Containers:     []corev1.Container{harness},
		Volumes:        volumes,
		// The pod gets no API credential of the namespace, and no
		// service links: the job is the tenant's, the cluster is not.
		AutomountServiceAccountToken:  ptr(false),
		EnableServiceLinks:            ptr(false),
		TerminationGracePeriodSeconds: &grace,
		NodeSelector:                  d.rt.NodeSelector,
		Tolerations:                   d.rt.Tolerations,
	}
	if d.rt.RuntimeClass != "" {
		pod.RuntimeClassName = ptr(d.rt.RuntimeClass)
	}
	meta := d.meta(name, name, j)
	job := &batchv1.Job{
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr(int32(0)),
			Completions:             ptr(int32(1)),
			Parallelism:             ptr(int32(1)),
			TTLSecondsAfterFinished: ptr(int32(d.ttl / time.Second)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels, Annotations: meta.Annotations},
				Spec:       pod,
			},
		},
	}
	if j.Timeout > 0 {
		// The cluster's own bound, from the Job's start: the harness's
		// timeout (which the driver counts from the harness's start) plus
		// time to schedule the pod and pull its images, so that a job
		// whose driver is gone still ends.
		job.Spec.ActiveDeadlineSeconds = ptr(int64(math.Ceil((j.Timeout + d.startAllowance).Seconds())))
	}
	return spec{job: job, input: input, image: image}, nil
}

// traceScript is the trace sidecar's program: wait, and on SIGTERM (sent
// once the harness has ended) print the trace file and exit.
const traceScript = `trap 'cat ` + traceFile + ` 2>/dev/null; exit 0' TERM; while :; do sleep 3600 & wait $!; done`

// meta is the metadata of an object of attempt j of Job job.
func (d *Driver) meta(name, job string, j drivers.Job) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: d.namespace,
		Labels:    map[string]string{LabelJob: job, labelManagedBy: managedBy},
		Annotations: map[string]string{
			annotationRunID: j.RunID,
			annotationTry:   strconv.Itoa(j.Attempt),
		},
	}
}

// secretObject is the Secret of Job job: the harness's secrets as one JSON
// object, name -> value, the file SVC_SECRETS_FILE names. It is owned by
// the Job, so the cluster's garbage collector deletes it with the Job even
// if the driver never gets to.
func (d *Driver) secretObject(job *batchv1.Job, j drivers.Job) (*corev1.Secret, error) {
	data, err := json.Marshal(j.Secrets)
	if err != nil {
		return nil, fmt.Errorf("encoding the job's secrets: %w", err)
	}
	meta := d.meta(SecretName(job.Name), job.Name, j)
	meta.OwnerReferences = []metav1.OwnerReference{ownerRef(job)}
	return &corev1.Secret{
		ObjectMeta: meta,
		Type:       corev1.SecretTypeOpaque,
		Immutable:  ptr(true),
		Data:       map[string][]byte{secretsKey: data},
	}, nil
}

// ownerRef makes an object a dependent of job.
func ownerRef(job *batchv1.Job) metav1.OwnerReference {
	// Not blockOwnerDeletion: the Job's foreground deletion need not wait
	// for them, and setting it needs a right on jobs/finalizers under the
	// OwnerReferencesPermissionEnforcement admission plugin.
	return metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID}
}

// resources are the declared resources as the container's requests and
// limits (equal, so a case gets what it declared and no more).
func (d *Driver) resources() (corev1.ResourceRequirements, error) {
	list := corev1.ResourceList{}
	if m := d.job.CPUMillicores; m > 0 {
		list[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(m), resource.DecimalSI)
	}
	if mb := d.job.MemoryMB; mb > 0 {
		list[corev1.ResourceMemory] = *resource.NewQuantity(int64(mb)<<20, resource.BinarySI)
	}
	gpus := d.rt.GPU
	if d.job.GPU != nil {
		gpus = *d.job.GPU
	}
	if gpus < 0 {
		return corev1.ResourceRequirements{}, derrors.Invalidf("resources.gpu is %d; declare zero or more GPUs", gpus)
	}
	var res corev1.ResourceRequirements
	if len(list) > 0 {
		res.Requests = list.DeepCopy()
	}
	if gpus > 0 {
		// Extended resources are limits (and requests equal to them).
		list[gpuResource] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	if len(list) > 0 {
		res.Limits = list
		if gpus > 0 {
			if res.Requests == nil {
				res.Requests = corev1.ResourceList{}
			}
			res.Requests[gpuResource] = list[gpuResource]
		}
	}
	return res, nil
}

// environment is the container's env: Job.Env, then the contract
// variables, which it cannot override, sorted by name so the spec of an
// attempt is the same each time it is built. Secrets are never in it.
func (d *Driver) environment(j drivers.Job) []corev1.EnvVar {
	env := make(map[string]string, len(j.Env)+8)
	for k, v := range j.Env {
		env[k] = v
	}
	drivers.SetContract(env, j, drivers.Paths{CaseFile: caseFile, TraceFile: traceFile, WorkDir: workDir, SecretsFile: secretsFile}, d.otlpEndpoint)
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]corev1.EnvVar, 0, len(names))
	for _, k := range names {
		out = append(out, corev1.EnvVar{Name: k, Value: escape(env[k])})
	}
	return out
}

// escape keeps the kubelet from expanding $(VAR) references in an env
// value or an argument: $$ stands for $, so the harness gets what it gave.
func escape(s string) string { return strings.ReplaceAll(s, "$", "$$") }

func escapeAll(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = escape(a)
	}
	return out
}

// ptr returns a pointer to v, for the API's optional fields.
func ptr[T any](v T) *T { return &v }
