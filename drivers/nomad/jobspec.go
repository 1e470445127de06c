package nomad

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/nomad/api"

	"svc/drivers"
	"svc/internal/platform/derrors"
)

// RuntimeOptions are the job settings of a nomad runtime (interface spec
// §2.6): the caller fills them from the RuntimeSpec. The cluster's address,
// region, namespace and token are in Config.
type RuntimeOptions struct {
	// TaskDriver is the runtime's `runtime`, the Nomad task driver: docker
	// (when empty), podman, exec, exec2 or raw_exec.
	TaskDriver string
	// Image is the runtime's default image; a Job's Image wins. Container
	// drivers need one; the exec drivers ignore it.
	Image string
	// Datacenters the job may be placed in; empty leaves Nomad's default.
	Datacenters []string
	// Constraints are the runtime's placement constraints.
	Constraints []Constraint
	// CPUMhzPerCore converts declared millicores to Nomad MHz; 0 means
	// unset, and a job declaring CPU is then refused (spec §2.6).
	CPUMhzPerCore int
	// GPU is the number of GPUs reserved per job unless the harness says.
	GPU int
}

// Constraint is a Nomad placement constraint (the runtime's
// constraints[]); Operator "" means "=".
type Constraint struct {
	Attribute string
	Operator  string
	Value     string
}

// JobOptions are the resources a harness (or its case) declares,
// `resources` in the spec: the caller fills them per job.
type JobOptions struct {
	// CPUMillicores is the declared CPU; 0 leaves Nomad's default.
	CPUMillicores int
	// MemoryMB is the declared memory; 0 leaves Nomad's default.
	MemoryMB int
	// GPU, when set, is the harness's resources.gpu, which wins over
	// RuntimeOptions.GPU.
	GPU *int
}

// Names inside the job: one group with one task.
const (
	groupName = "case"
	taskName  = "harness"
	gpuDevice = "nvidia/gpu"
)

// Where the contract files are, as the task sees them (Nomad interpolates
// the variables in the task's env) and as the client filesystem API and
// the templates name them (relative to the allocation directory and to the
// task directory).
const (
	envCaseFile    = "${NOMAD_TASK_DIR}/case.json"
	envWorkDir     = "${NOMAD_TASK_DIR}/work"
	envSecretsFile = "${NOMAD_SECRETS_DIR}/svc-secrets.json"
	envTraceFile   = "${NOMAD_ALLOC_DIR}/data/svc-trace.jsonl"

	caseDest    = "local/case.json"
	workDest    = "local/work"
	secretsDest = "secrets/svc-secrets.json"
	// traceFSPath is the trace file for /v1/client/fs/cat, whose paths
	// start at the allocation directory (NOMAD_ALLOC_DIR is its alloc/).
	traceFSPath = "alloc/data/svc-trace.jsonl"
	// containerWorkDir is the task directory's local/work as a container
	// sees it (Nomad mounts local/ at /local).
	containerWorkDir = "/local/work"
)

// Meta keys the driver sets on its jobs; a job found under a driver's ID
// without them is not adopted.
const (
	metaRunID   = "svc.run_id"
	metaAttempt = "svc.attempt"
)

// taskDrivers says, per supported task driver, how it runs a command: with
// an image (and in which config key it takes the working directory).
var taskDrivers = map[string]struct {
	container bool
	workDir   string
}{
	"docker":   {container: true, workDir: "work_dir"},
	"podman":   {container: true, workDir: "working_dir"},
	"exec":     {},
	"exec2":    {},
	"raw_exec": {},
}

// JobID is the Nomad job ID of attempt attempt of run runID: the same
// for every Run of that attempt, so that a retried activity finds the job
// it registered. An ID that is not a plain name is cleaned and suffixed
// with a digest of the original, so two runs never share a job.
func JobID(runID string, attempt int) string {
	const maxLen = 100
	var b strings.Builder
	safe := runID != "" && len(runID) <= maxLen
	for _, r := range runID {
		ok := r < utf8.RuneSelf && (r == '-' || r == '_' || r == '.' ||
			'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		if !ok {
			safe = false
			r = '_'
		}
		if b.Len() < 64 {
			b.WriteRune(r)
		}
	}
	name := runID
	if !safe {
		sum := sha256.Sum256([]byte(runID))
		name = b.String() + "-" + hex.EncodeToString(sum[:6])
	}
	return "svc-" + name + "-a" + strconv.Itoa(attempt)
}

// VariablePath is the Nomad Variable holding the secrets of job jobID: the
// path a task's workload identity may read without any ACL policy.
func VariablePath(jobID string) string { return "nomad/jobs/" + jobID }

// spec is a job ready to register, with what the driver needs to follow it.
type spec struct {
	job   *api.Job
	image string // what the task runs in; "" for the exec drivers
}

// jobSpec builds the Nomad job of attempt j: a batch job with one group
// and one task that is never restarted or rescheduled, so that one
// attempt is one run of the harness. Secret values are not in it: the
// task reads them from the Variable at VariablePath(id) (see Driver.Run).
func (d *Driver) jobSpec(id string, j drivers.Job) (spec, error) {
	rt := d.rt
	drv := rt.TaskDriver
	if drv == "" {
		drv = "docker"
	}
	kind, ok := taskDrivers[drv]
	if !ok {
		names := make([]string, 0, len(taskDrivers))
		for n := range taskDrivers {
			names = append(names, n)
		}
		slices.Sort(names)
		return spec{}, derrors.Invalidf("nomad runtime: task driver %q is not supported; set the runtime's runtime to one of %s", drv, strings.Join(names, ", "))
	}
	config := map[string]any{"command": j.Command[0]}
	if len(j.Command) > 1 {
		config["args"] = j.Command[1:]
	}
	var image string
	if kind.container {
		image = j.Image
		if image == "" {
			image = rt.Image
		}
		if image == "" {
			return spec{}, derrors.Invalidf("nomad runtime: task driver %s runs containers but neither the harness nor the runtime names an image", drv)
		}
		config["image"] = image
		config[kind.workDir] = path.Join(containerWorkDir, j.WorkDir)
	} else if j.WorkDir != "" {
		return spec{}, derrors.Invalidf("nomad runtime: task driver %s cannot set the working directory; drop the harness's workDir or use docker or podman", drv)
	}

	res, err := d.resources()
	if err != nil {
		return spec{}, err
	}

	task := &api.Task{
		Name:        taskName,
		Driver:      drv,
		Config:      config,
		Env:         d.environment(j),
		Templates:   templates(id, j),
		Resources:   res,
		KillTimeout: ptr(d.killGrace),
		KillSignal:  "SIGTERM",
	}
	group := &api.TaskGroup{
		Name:  ptr(groupName),
		Count: ptr(1),
		Tasks: []*api.Task{task},
		RestartPolicy: &api.RestartPolicy{
			Attempts: ptr(0),
			Mode:     ptr("fail"),
		},
		ReschedulePolicy: &api.ReschedulePolicy{
			Attempts:  ptr(0),
			Unlimited: ptr(false),
		},
	}
	job := &api.Job{
		ID:          ptr(id),
		Name:        ptr(id),
		Type:        ptr(api.JobTypeBatch),
		Datacenters: slices.Clone(rt.Datacenters),
		TaskGroups:  []*api.TaskGroup{group},
		Meta: map[string]string{
			metaRunID:   j.RunID,
			metaAttempt: strconv.Itoa(j.Attempt),
		},
	}
	if d.cfg.Namespace != "" {
		job.Namespace = ptr(d.cfg.Namespace)
	}
	if d.cfg.Region != "" {
		job.Region = ptr(d.cfg.Region)
	}
	for _, c := range rt.Constraints {
		op := c.Operator
		if op == "" {
			op = "="
		}
		job.Constraints = append(job.Constraints, api.NewConstraint(c.Attribute, op, c.Value))
	}
	return spec{job: job, image: image}, nil
}

// resources converts the declared resources: millicores to MHz by the
// runtime's cpuMhzPerCore (rounding up, as registry.RuntimeSpec.CPUMHz),
// and the harness's GPU count over the runtime's.
func (d *Driver) resources() (*api.Resources, error) {
	res := &api.Resources{}
	if m := d.job.CPUMillicores; m > 0 {
		if d.rt.CPUMhzPerCore <= 0 {
			return nil, derrors.Invalidf("the harness declares resources.cpu but the nomad runtime sets no cpuMhzPerCore to convert millicores to MHz; set cpuMhzPerCore on the runtime")
		}
		res.CPU = ptr((m*d.rt.CPUMhzPerCore + 999) / 1000)
	}
	if d.job.MemoryMB > 0 {
		res.MemoryMB = ptr(d.job.MemoryMB)
	}
	gpus := d.rt.GPU
	if d.job.GPU != nil {
		gpus = *d.job.GPU
	}
	if gpus > 0 {
		res.Devices = []*api.RequestedDevice{{Name: gpuDevice, Count: ptr(uint64(gpus))}}
	}
	return res, nil
}

// environment is the task's env: Job.Env, then the contract variables,
// which it cannot override. Secrets are never in it.
func (d *Driver) environment(j drivers.Job) map[string]string {
	env := make(map[string]string, len(j.Env)+8)
	for k, v := range j.Env {
		env[k] = v
	}
	drivers.SetContract(env, j, drivers.Paths{CaseFile: envCaseFile, TraceFile: envTraceFile, WorkDir: envWorkDir, SecretsFile: envSecretsFile}, d.otlpEndpoint)
	return env
}

// templates are the files the task finds at start: the case, the
// harness's Files in the work directory (inline data, under delimiters
// that occur nowhere in it, so that it is copied and not interpreted),
// and the secrets file, rendered from the job's Variable (or "{}" when
// there are no secrets).
func templates(id string, j drivers.Job) []*api.Template {
	out := []*api.Template{literal(caseDest, string(j.Case), "0644")}
	names := make([]string, 0, len(j.Files))
	for n := range j.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		content := j.Files[n]
		perms := "0644"
		if strings.HasPrefix(content, "#!") {
			perms = "0755"
		}
		if content == "" {
			// Nomad refuses a template without data; a space is the
			// nearest thing to an empty file it renders.
			content = " "
		}
		out = append(out, literal(path.Join(workDest, path.Clean(n)), content, perms))
	}
	secrets := literal(secretsDest, "{}", "0600")
	if len(j.Secrets) > 0 {
		// The only template the driver lets Nomad interpret: it reads the
		// Variable the driver wrote, which the task's workload identity may
		// read because its path is nomad/jobs/<job id>.
		secrets = &api.Template{
			DestPath:     ptr(secretsDest),
			EmbeddedTmpl: ptr(secretsTemplate(id)),
			ChangeMode:   ptr("noop"),
			Perms:        ptr("0600"),
			// Rendered once: deleting the Variable after the job must
			// not re-render the file, nor does the task need updates.
			Once: ptr(true),
		}
	}
	return append(out, secrets)
}

// secretsTemplate renders the Variable of job id as one JSON object,
// name -> value. It ranges over the items rather than calling a helper of
// newer Nomad versions, and quotes with toJSON, so any value is valid JSON.
func secretsTemplate(id string) string {
	return fmt.Sprintf(`{{ with nomadVar %q }}{ {{- $first := true }}`+
		`{{ range $k, $v := . }}{{ if not $first }},{{ end }}{{ $first = false }}{{ $k | toJSON }}:{{ $v.Value | toJSON }}{{ end -}}`+
		` }{{ end }}`, VariablePath(id))
}

// literal is a template that renders data as it is.
func literal(dest, data, perms string) *api.Template {
	l, r := delimiters(data)
	return &api.Template{
		DestPath:     ptr(dest),
		EmbeddedTmpl: ptr(data),
		LeftDelim:    ptr(l),
		RightDelim:   ptr(r),
		ChangeMode:   ptr("noop"),
		Perms:        ptr(perms),
	}
}

// delimiters returns template delimiters that occur nowhere in data, so
// that Nomad's template engine finds no action in it and renders it
// verbatim. They are derived from data (not random), so that the job
// spec of an attempt is the same every time it is built.
func delimiters(data string) (left, right string) {
	sum := sha256.Sum256([]byte(data))
	tag := hex.EncodeToString(sum[:8])
	for i := 0; ; i++ {
		left, right = "<<svc"+tag+strconv.Itoa(i), strconv.Itoa(i)+tag+"svc>>"
		if !strings.Contains(data, left) && !strings.Contains(data, right) {
			return left, right
		}
	}
}

// taskImage reads the image the registered job's task runs in ("" for a
// driver without one): for an adopted job, what it really runs.
func taskImage(job *api.Job) string {
	if job == nil {
		return ""
	}
	for _, g := range job.TaskGroups {
		for _, t := range g.Tasks {
			if t.Name == taskName {
				if s, ok := t.Config["image"].(string); ok {
					return s
				}
			}
		}
	}
	return ""
}

// ptr returns a pointer to v, for the api package's optional fields.
func ptr[T any](v T) *T { return &v }
