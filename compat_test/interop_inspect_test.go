package compat_test

import (
	"context"
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

	"github.com/interlock-go/interlock/internal/keys"
	"github.com/interlock-go/interlock/internal/redistest"
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

// TestInteropInspectShowsJavaRateLimiter runs the interlock CLI's inspect
// on rate limiters that Redisson set and took permits from, overall and
// per client: it must show their config, the permits free and taken, the
// Java client's own window, and the TTLs of the keep-alive.
func TestInteropInspectShowsJavaRateLimiter(t *testing.T) {
	t.Parallel()
	bin := interlockCLI(t)

	for _, version := range peerVersions {
		t.Run(version, func(t *testing.T) {
			parallel(t)
			p := startJavaPeer(t, version, []string{standaloneAddr})
			base := unique("inspect-java-rl")
			overall, perClient := base+":overall", base+":pc"
			rc := redistest.NewClient(t, standaloneAddr)
			t.Cleanup(func() {
				rc.Do(context.Background(), rc.B().Del().Key(append(keys.RateLimiter(overall, p.ClientID()),
					keys.RateLimiter(perClient, p.ClientID())...)...).Build())
			})
			must := func(r peerReply) {
				t.Helper()
				r.mustOK(t)
			}
			must(p.Do(t, rlReq("trySetRate", overall, peerRateArgs{RateType: "OVERALL", Rate: 10, IntervalMs: 60000, KeepAliveMs: 120000})))
			must(p.Do(t, peerReq{Thread: 1, Op: "acquire", Kind: "ratelimit", Name: overall, Permits: 3}))
			must(p.Do(t, peerReq{Thread: 1, Op: "acquire", Kind: "ratelimit", Name: overall, Permits: 1}))
			must(p.Do(t, rlReq("trySetRate", perClient, peerRateArgs{RateType: "PER_CLIENT", Rate: 4, IntervalMs: 30000})))
			must(p.Do(t, peerReq{Thread: 1, Op: "acquire", Kind: "ratelimit", Name: perClient, Permits: 2}))

			out, err := exec.Command(bin, "inspect", "--json", "--redis", "redis://"+standaloneAddr, overall, perClient).Output()
			require.NoError(t, err, "inspect")
			type window struct {
				ClientID     string `json:"client_id"`
				Free         int64  `json:"free_permits"`
				Taken        int64  `json:"taken"`
				Acquisitions int64  `json:"acquisitions"`
				NextFreeMs   int64  `json:"next_free_ms"`
				ValueTTLms   int64  `json:"value_ttl_ms"`
				PermitsTTLms int64  `json:"permits_ttl_ms"`
			}
			type report struct {
				Kind        string   `json:"kind"`
				TTLms       int64    `json:"ttl_ms"`
				Notes       []string `json:"notes"`
				RateLimiter struct {
					Type        string   `json:"type"`
					Rate        int64    `json:"rate"`
					IntervalMs  int64    `json:"interval_ms"`
					KeepAliveMs int64    `json:"keep_alive_ms"`
					Overall     *window  `json:"overall"`
					Clients     []window `json:"clients"`
				} `json:"rate_limiter"`
			}
			var got []report
			dec := json.NewDecoder(strings.NewReader(string(out)))
			for dec.More() {
				var r report
				require.NoError(t, dec.Decode(&r), "%s", out)
				got = append(got, r)
			}
			require.Len(t, got, 2, "%s", out)

			o := got[0]
			assert.Equal(t, "ratelimit", o.Kind)
			assert.Empty(t, o.Notes)
			assert.Equal(t, "OVERALL", o.RateLimiter.Type)
			assert.EqualValues(t, 10, o.RateLimiter.Rate)
			assert.EqualValues(t, 60000, o.RateLimiter.IntervalMs)
			assert.EqualValues(t, 120000, o.RateLimiter.KeepAliveMs)
			assert.InDelta(t, 120000, o.TTLms, 10000, "the keep-alive's TTL")
			require.NotNil(t, o.RateLimiter.Overall, "%s", out)
			w := *o.RateLimiter.Overall
			assert.Equal(t, []int64{6, 4, 2}, []int64{w.Free, w.Taken, w.Acquisitions}, "%s", out)
			assert.InDelta(t, 60000, w.NextFreeMs, 10000)
			assert.InDelta(t, 120000, w.ValueTTLms, 10000)
			assert.InDelta(t, 120000, w.PermitsTTLms, 10000)

			pc := got[1]
			assert.Equal(t, "ratelimit", pc.Kind)
			assert.Empty(t, pc.Notes)
			assert.Equal(t, "PER_CLIENT", pc.RateLimiter.Type)
			assert.EqualValues(t, 4, pc.RateLimiter.Rate)
			assert.EqualValues(t, -1, pc.TTLms)
			assert.Nil(t, pc.RateLimiter.Overall)
			require.Len(t, pc.RateLimiter.Clients, 1, "%s", out)
			cw := pc.RateLimiter.Clients[0]
			assert.Equal(t, p.ClientID(), cw.ClientID, "the Redisson client's own window")
			assert.Equal(t, []int64{2, 2, 1}, []int64{cw.Free, cw.Taken, cw.Acquisitions}, "%s", out)
			assert.EqualValues(t, -1, cw.ValueTTLms)

			table, err := exec.Command(bin, "inspect", "--redis", "redis://"+standaloneAddr, overall, perClient).Output()
			require.NoError(t, err, "inspect")
			assert.Contains(t, string(table), "OVERALL 10 per 1m0s, keep-alive 2m0s: 6 free now, 4 taken in the window (2 acquisitions")
			assert.Contains(t, string(table), "PER_CLIENT 4 per 30s each: 1 client\n")
			t.Logf("%s: inspect shows\n%s", version, table)
		})
	}
}
