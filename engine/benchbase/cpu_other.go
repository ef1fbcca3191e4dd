//go:build !unix

package benchbase

import "time"

// ProcessCPU is not measured here: 0.
func ProcessCPU() time.Duration { return 0 }
