package benchcompare

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/stoatflow/stoatctl/engine/broker"
)

// startBrokerChild starts this program again as an embedded broker and
// returns its address, its process id, and a stop that ends it and
// waits. The program's main serves it when broker.IsChild says so
// (scripts/benchcompare).
func startBrokerChild(ctx context.Context) (addr string, pid int, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", 0, nil, fmt.Errorf("start the embedded broker: %w", err)
	}
	cmd := exec.Command(exe)
	addr, stop, err = broker.StartChild(ctx, cmd)
	if err != nil {
		return "", 0, nil, err
	}
	return addr, cmd.Process.Pid, stop, nil
}
