package config

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultStateDir is state.dir when it is not set: stoatflow-<user> in the
// system's temporary directory. One directory per user, so that two users'
// runs on one host neither share state nor trip over each other's
// permissions (a shared /tmp/stoatflow, made by the first, was not
// writable by the second); below it the application id keeps applications
// apart (<state.dir>/<application.id>), as Kafka Streams' state.dir does.
func DefaultStateDir() string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = strconv.Itoa(os.Getuid())
	}
	// A Windows user name may carry its domain (DOMAIN\user).
	name = strings.NewReplacer(`\`, "_", "/", "_").Replace(name)
	return filepath.Join(os.TempDir(), "stoatflow-"+name)
}
