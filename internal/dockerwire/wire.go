// Package dockerwire is the line protocol between internal/redistest and
// its Docker helper (internal/redistest/docker, a module of its own so that
// testcontainers-go and the Docker client stay out of the library's module
// graph).
//
// The test process starts the helper once and writes one JSON Request per
// line to its stdin; the helper answers each with one JSON Reply per line
// on its stdout, with the Request's ID, in any order. When its stdin
// closes (the test process ended, however it ended) the helper removes
// every container it started and exits.
package dockerwire

// The operations. Each names the Request fields it reads and the Reply
// fields it sets; every Reply may carry Err and Code instead.
const (
	// OpReady checks that a Docker engine answers and removes the
	// containers of dead test processes of this host. Code Unavailable
	// when no engine answers.
	OpReady = "ready"
	// OpImage checks that Image exists locally. Code NotFound when it
	// does not: images are never pulled.
	OpImage = "image"
	// OpRun starts a container of Image on the host network with Args as
	// its command line, labelled with PID, and waits until its log says
	// ReadyLine and Port listens. Entrypoint, when set, replaces the
	// image's; Files are written into the container before it starts.
	// Sets Ctr. Code AddrInUse when the port was taken; Err carries the
	// log's last lines on failure.
	OpRun = "run"
	// OpState sets Running, Paused, Status and ExitCode of Ctr.
	OpState = "state"
	// OpKill kills Ctr with SIGKILL (thawing it first) and waits until it
	// has exited; nothing if it does not run.
	OpKill = "kill"
	// OpPause freezes Ctr (Pause true) or thaws it (Pause false).
	OpPause = "pause"
	// OpStart starts the exited Ctr again, with its command line.
	OpStart = "start"
	// OpRemove removes Ctr, thawing it first if paused.
	OpRemove = "remove"
	// OpExec runs Cmd in Ctr and sets Out and ExitCode.
	OpExec = "exec"
	// OpLogs sets Out to the log of Ctr.
	OpLogs = "logs"
)

// The codes a Reply's Code takes, for the failures the caller acts on.
const (
	Unavailable = "unavailable"
	NotFound    = "not_found"
	AddrInUse   = "addr_in_use"
	Transient   = "transient"
)

// A Request is one operation. TimeoutMillis bounds it in the helper (a
// default applies when zero).
type Request struct {
	ID            uint64   `json:"id"`
	Op            string   `json:"op"`
	TimeoutMillis int64    `json:"timeout_ms,omitempty"`
	Image         string   `json:"image,omitempty"`
	Args          []string `json:"args,omitempty"`
	Port          int      `json:"port,omitempty"`
	ReadyLine     string   `json:"ready_line,omitempty"`
	PID           int      `json:"pid,omitempty"`
	Ctr           string   `json:"ctr,omitempty"`
	Pause         bool     `json:"pause,omitempty"`
	Cmd           []string `json:"cmd,omitempty"`
	Entrypoint    []string `json:"entrypoint,omitempty"`
	Files         []File   `json:"files,omitempty"`
}

// A File is written into a container of OpRun before it starts: a server
// that rewrites its config file (a sentinel) gets one this way, in images
// that have no shell to make it.
type File struct {
	Path    string `json:"path"`    // absolute, in an existing directory
	Content string `json:"content"` // may be empty
	Mode    int64  `json:"mode"`    // permission bits, such as 0o600
}

// A Reply answers the Request with the same ID.
type Reply struct {
	ID       uint64 `json:"id"`
	Err      string `json:"err,omitempty"`
	Code     string `json:"code,omitempty"`
	Ctr      string `json:"ctr,omitempty"`
	Out      string `json:"out,omitempty"`
	Running  bool   `json:"running,omitempty"`
	Paused   bool   `json:"paused,omitempty"`
	Status   string `json:"status,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
}
