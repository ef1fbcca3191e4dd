package benchcompare

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/stoatflow/stoatctl/engine/broker"
)

// startBrokerChild starts this program again as an embedded broker and
// returns its address, and a stop that ends it and waits. The program's
// main serves it when broker.IsChild says so (scripts/benchcompare).
func startBrokerChild(ctx context.Context) (addr string, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("start the embedded broker: %w", err)
	}
	return broker.StartChild(ctx, exec.Command(exe))
}
