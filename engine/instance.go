package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
)

// The instance identity. Under exactly-once an instance's transactional
// id is "<application.id>-<stoatflow.instance.id>", and two processes
// with one transactional id fence each other: each start of one aborts
// the other's open transaction. So the id must be unique among the
// instances running at once, and the same across the restarts of one
// instance, so that a restart fences its own crashed predecessor at once
// instead of waiting out its transaction timeout.
//
// When stoatflow.instance.id is not set, the engine keeps a generated id
// in the application's state directory (<state.dir>/<application.id>/
// instance.id), as Kafka Streams keeps its process id there: each state
// directory is one instance. The default client.id carries the instance
// id, so that a start can find, among the group's members, a live one
// with its own id, and refuse to start rather than fence it
// (ErrInstanceInUse).

// instanceFile is the file, in <state.dir>/<application.id>, that keeps
// the generated instance id.
const instanceFile = "instance.id"

// instanceIDPattern is what a kept id must look like; anything else in
// the file is a corrupt or foreign file, not an id to trust.
var instanceIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// resolveInstance claims a default state directory when state.dir is not
// set, and fills in stoatflow.instance.id when it is not set, from the
// state directory's kept id (made on the first start). It runs before
// anything reads the configuration concurrently.
func (e *Engine) resolveInstance() error {
	app := strings.TrimSpace(e.cfg.String(config.ApplicationID))
	if app == "" {
		// readSettings reports the missing application id.
		return nil
	}
	root := strings.TrimSpace(e.cfg.String(config.StateDir))
	if root == "" {
		// Whatever names the instance: two instances side by side must
		// not share the default directory's databases either.
		var err error
		if root, err = e.claimDefaultStateDir(app); err != nil {
			return err
		}
	}
	if e.cfg.IsSet(kafka.InstanceID) {
		e.instanceFrom = "config " + kafka.InstanceID
		return nil
	}
	dir := filepath.Join(root, app)
	id, made, err := keptInstanceID(dir)
	if err != nil {
		return fmt.Errorf("engine: instance identity: %w; set %s to name this instance instead", err, kafka.InstanceID)
	}
	e.cfg = e.cfg.With(kafka.InstanceID, id)
	path := filepath.Join(dir, instanceFile)
	if made {
		e.instanceFrom = "new, kept in " + path
	} else {
		e.instanceFrom = path
	}
	return nil
}

// stateSlots is how many instances of one application may run side by
// side on one host with the default state.dir.
const stateSlots = 16

// stateLockFile, in <state.dir>/<application.id>, is held by the instance
// that runs on a default state directory, for as long as it runs.
const stateLockFile = "instance.lock"

// StateSlotDir is the default state.dir of the n-th instance (from 1) of
// an application started side by side on one host: DefaultStateDir for
// the first, <DefaultStateDir>.instance-N beside it for the others (not
// below it, where an application id could take the name).
func StateSlotDir(n int) string {
	if n <= 1 {
		return config.DefaultStateDir()
	}
	return fmt.Sprintf("%s.instance-%d", config.DefaultStateDir(), n)
}

// claimDefaultStateDir picks the state directory of an instance whose
// state.dir is not set. Every instance on the default directory would
// share its instance id and databases, so a second one started beside the
// first (the same application, default flags) waited for the first to
// leave the group, as a restart of it would. Instead each takes the first
// slot whose lock no running instance holds (StateSlotDir), with its own
// instance id and state kept there; a restarted instance takes the lowest
// free slot again, so one instance run again and again keeps its own. It
// sets state.dir to the slot, so that everything after reads it, and
// keeps the lock until Run returns.
func (e *Engine) claimDefaultStateDir(app string) (string, error) {
	for n := 1; n <= stateSlots; n++ {
		root := StateSlotDir(n)
		dir := filepath.Join(root, app)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("engine: make state directory %s: %w", dir, err)
		}
		unlock, ok, err := lockFile(filepath.Join(dir, stateLockFile))
		if err != nil {
			return "", fmt.Errorf("engine: state directory %s: %w", dir, err)
		}
		if !ok {
			continue
		}
		e.releaseState = unlock
		e.cfg = e.cfg.With(config.StateDir, root)
		if n > 1 {
			e.log.Info("the default state directory is in use by another instance of this application on this host; this instance keeps its state and id in a directory of its own",
				"in_use", filepath.Join(StateSlotDir(1), app), "state_dir", root)
		}
		return root, nil
	}
	return "", fmt.Errorf("engine: %d instances of %s already run on this host with the default %s; set %s (stoatctl run --state-dir) for more",
		stateSlots, app, config.StateDir, config.StateDir)
}

// keptInstanceID reads the instance id kept in dir, making one if there
// is none. Two processes starting at once on one directory agree: the id
// is written to a temporary file and linked into place, and the loser of
// the link reads the winner's.
func keptInstanceID(dir string) (id string, made bool, err error) {
	path := filepath.Join(dir, instanceFile)
	if id, err := readInstanceID(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return id, false, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("make state directory %s: %w", dir, err)
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", false, fmt.Errorf("generate an instance id: %w", err)
	}
	id = hex.EncodeToString(raw[:])
	tmp, err := os.CreateTemp(dir, instanceFile+".*")
	if err != nil {
		return "", false, fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(id + "\n")
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return "", false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			id, err := readInstanceID(path)
			return id, false, err
		}
		return "", false, fmt.Errorf("write %s: %w", path, err)
	}
	return id, true, nil
}

func readInstanceID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	id := strings.TrimSpace(string(b))
	if !instanceIDPattern.MatchString(id) {
		return "", fmt.Errorf("%s does not hold an instance id (%d bytes); remove it to have a new one made", path, len(b))
	}
	return id, nil
}

// ErrInstanceInUse is returned, wrapped in an *InstanceInUseError, when a
// live member of the group already runs with this instance's id.
var ErrInstanceInUse = errors.New("instance id in use by a running instance")

// InstanceInUseError names the member that holds this instance's id.
type InstanceInUseError struct {
	InstanceID, TransactionalID string
	// Member, ClientID and Host are the holder's, as the group
	// coordinator describes it.
	Member, ClientID, Host string
	// Waited is how long the start waited for the holder to leave, as a
	// crashed predecessor does when its session times out.
	Waited time.Duration
}

func (e *InstanceInUseError) Error() string {
	return fmt.Sprintf("%s=%s (transactional id %s) is in use by group member %s (client %s at %s), which did not leave within %s: "+
		"a second instance with the same id would fence the first; give each instance its own %s, or leave it unset to have one kept in its state.dir",
		kafka.InstanceID, e.InstanceID, e.TransactionalID, e.Member, e.ClientID, e.Host, e.Waited.Round(time.Second), kafka.InstanceID)
}

func (e *InstanceInUseError) Unwrap() error { return ErrInstanceInUse }

// groupMember is what the start-up checks need of a group member.
type groupMember struct {
	id, clientID, host, instanceID string
}

// awaitGroup waits, before this instance joins the group, until the group
// holds no member that would make the join wrong, up to a session timeout
// (and 2 s): a crashed predecessor's member stays until its session times
// out, a live instance's does not leave. Two kinds of member are waited
// for:
//   - one whose client id is this instance's: another process running
//     with the same instance id, which this start would fence
//     (ErrInstanceInUse). Recognised only through the default client id;
//     with client.id set, instances cannot be told apart this way.
//   - any other, when single says the topology must run as one instance
//     (ErrSplitBoundary).
//
// A static member with this instance's group.instance.id is this
// instance's own predecessor and never counts.
func (r *runner) awaitGroup(ctx context.Context, single string) error {
	own := !r.e.cfg.IsSet(kafka.ClientID)
	if !own && single == "" {
		return nil
	}
	clientID := kafka.DefaultClientID(r.e.cfg)
	txnID, _ := kafka.TransactionalID(r.e.cfg)
	session := 45 * time.Second
	if ms, err := r.e.cfg.ForClient(config.MainConsumer).Int("session.timeout.ms", 0); err == nil && ms > 0 {
		session = time.Duration(ms) * time.Millisecond
	}
	self := strings.TrimSpace(r.e.cfg.ForClient(config.MainConsumer).String("group.instance.id"))
	wait := session + 2*time.Second
	start := time.Now()
	logged := false
	for {
		members, err := r.groupMembers(ctx)
		if err != nil {
			return err
		}
		var twin *groupMember
		others := 0
		for _, m := range members {
			if self != "" && m.instanceID == self {
				continue
			}
			others++
			if own && m.clientID == clientID && twin == nil {
				twin = &m
			}
		}
		if twin == nil && (single == "" || others == 0) {
			return nil
		}
		if time.Since(start) > wait {
			if twin != nil {
				return &InstanceInUseError{InstanceID: r.e.cfg.String(kafka.InstanceID), TransactionalID: txnID,
					Member: twin.id, ClientID: twin.clientID, Host: twin.host, Waited: wait}
			}
			return fmt.Errorf("engine: %w: group %s still has %d active member(s) after %s; %s",
				ErrSplitBoundary, r.s.appID, others, wait, single)
		}
		if !logged {
			if twin != nil {
				r.e.log.Warn("a group member runs with this instance's id; waiting for it to leave (a crashed predecessor leaves when its session times out, a live instance is refused)",
					"group", r.s.appID, "instance", r.e.cfg.String(kafka.InstanceID), "member", twin.id, "host", twin.host, "session.timeout", session)
			} else {
				r.e.log.Warn("group has members; waiting for them to leave (a crashed predecessor leaves when its session times out)",
					"group", r.s.appID, "members", others, "session.timeout", session)
			}
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// groupMembers describes the application's group. Errors a settling
// coordinator gives (COORDINATOR_NOT_AVAILABLE on a new cluster, whose
// offsets topic does not exist yet; COORDINATOR_LOAD_IN_PROGRESS;
// NOT_COORDINATOR) are retried for up to resetRetryFor; a group the
// coordinator does not know has no members.
func (r *runner) groupMembers(ctx context.Context) ([]groupMember, error) {
	var g kadm.DescribedGroup
	deadline := time.Now().Add(resetRetryFor)
	for attempt := 1; ; attempt++ {
		groups, err := r.adm.DescribeGroups(ctx, r.s.appID)
		if err == nil {
			var ok bool
			if g, ok = groups[r.s.appID]; !ok || errors.Is(g.Err, kerr.GroupIDNotFound) {
				return nil, nil
			}
			err = g.Err
		}
		if err == nil {
			break
		}
		if !transient(err) || time.Now().After(deadline) {
			return nil, fmt.Errorf("engine: describe group %s: %w", r.s.appID, conn.Explain(err, "describe", "group "+r.s.appID))
		}
		r.e.log.Debug("describe group: the coordinator is settling; retrying", "group", r.s.appID, "attempt", attempt, "err", err)
		if err := settlingBackoff.Wait(ctx, attempt); err != nil {
			return nil, err
		}
	}
	out := make([]groupMember, 0, len(g.Members))
	for _, m := range g.Members {
		gm := groupMember{id: m.MemberID, clientID: m.ClientID, host: m.ClientHost}
		if m.InstanceID != nil {
			gm.instanceID = *m.InstanceID
		}
		out = append(out, gm)
	}
	return out, nil
}

// holderOf names, for a fencing error, the group member other than this
// instance that runs with its client id, if the group has one.
func (r *runner) holderOf(ctx context.Context) string {
	if r.e.cfg.IsSet(kafka.ClientID) {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	members, err := r.groupMembers(ctx)
	if err != nil {
		return ""
	}
	mine := ""
	if r.cl != nil {
		mine, _ = r.cl.GroupMetadata()
	}
	clientID := kafka.DefaultClientID(r.e.cfg)
	for _, m := range members {
		if m.clientID == clientID && m.id != mine {
			return fmt.Sprintf("group member %s at %s", m.id, m.host)
		}
	}
	return ""
}
