//go:build !linux

package bench

import (
	"errors"
)

// errNoAffinity: pinning CPUs and reading them back needs Linux.
var errNoAffinity = errors.New("pinning processes to CPUs needs Linux")

func allowedCPUs() ([]int, error)       { return nil, errNoAffinity }
func pinSelf(int) (func() error, error) { return nil, errNoAffinity }
func processCPUs(int) (string, error)   { return "", errNoAffinity }
