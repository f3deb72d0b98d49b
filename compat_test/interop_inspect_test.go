package compat_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The interlock CLI, built once per test binary run for the tests that run
// it, into a directory that TestMain's teardown removes.
var cli struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// interlockCLI returns the path of the CLI, failing t if it cannot be built.
func interlockCLI(t *testing.T) string {
	t.Helper()
	cli.once.Do(func() {
		if cli.dir, cli.err = os.MkdirTemp("", "interlock-compat-cli-"); cli.err != nil {
			return
		}
		cli.path = filepath.Join(cli.dir, "interlock")
		out, err := exec.Command("go", "build", "-o", cli.path, "github.com/interlock-go/interlock/cmd/interlock").CombinedOutput()
		if err != nil {
			cli.err = fmt.Errorf("%w: %s", err, out)
		}
	})
	require.NoError(t, cli.err, "building the CLI")
	return cli.path
}

// removeCLI removes what interlockCLI built.
func removeCLI() {
	if cli.dir != "" {
		_ = os.RemoveAll(cli.dir)
	}
}

// TestInteropInspectShowsJavaHolders runs the interlock CLI's inspect on
// locks that Redisson threads hold: it must show Java's client id and
// thread id, for every kind.
func TestInteropInspectShowsJavaHolders(t *testing.T) {
	t.Parallel()
	bin := interlockCLI(t)

	for _, version := range peerVersions {
		t.Run(version, func(t *testing.T) {
			parallel(t)
			p := startJavaPeer(t, version, []string{standaloneAddr})
			for i, kind := range []string{"reentrant", "fair", "write", "read", "fenced"} {
				name := "inspect-java:" + strings.ReplaceAll(t.Name(), "/", ":") + ":" + kind
				thread := i + 1
				r := p.Do(t, peerReq{Thread: thread, Op: "lock", Kind: kind, Name: name})
				require.True(t, r.OK, "%s lock: %s", kind, r.Err)

				cmd := exec.Command(bin, "inspect", "--json", "--redis", "redis://"+standaloneAddr, name)
				out, err := cmd.Output()
				require.NoError(t, err, "inspect %s", name)
				var got struct {
					Kind    string `json:"kind"`
					Locked  bool   `json:"locked"`
					Holders []struct {
						Field    string `json:"field"`
						ClientID string `json:"client_id"`
						OwnerID  int64  `json:"owner_id"`
						Write    bool   `json:"write"`
						Holds    int    `json:"holds"`
					} `json:"holders"`
				}
				require.NoError(t, json.Unmarshal(out, &got), "%s", out)
				assert.True(t, got.Locked, kind)
				require.Len(t, got.Holders, 1, "%s: %s", kind, out)
				h := got.Holders[0]
				assert.Equal(t, p.ClientID(), h.ClientID, kind)
				assert.Equal(t, r.ThreadID, h.OwnerID, kind)
				assert.Equal(t, 1, h.Holds, kind)
				assert.Equal(t, kind == "write", h.Write, kind)
				owner := p.Owner(t, thread)
				if kind == "write" {
					owner += ":write"
				}
				assert.Equal(t, owner, h.Field, kind)
				t.Logf("%s (%s): inspect shows %s, owner id %s", kind, got.Kind, h.ClientID, strconv.FormatInt(h.OwnerID, 10))

				r = p.Do(t, peerReq{Thread: thread, Op: "unlock", Kind: kind, Name: name})
				require.True(t, r.OK, "%s unlock: %s", kind, r.Err)
			}
		})
	}
}
