// Package buildinfo says which build of tqscavenger is running: the module
// version, the VCS revision it was built from and the Go version, as the
// Go toolchain records them in the binary (runtime/debug.ReadBuildInfo).
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Info describes a build.
type Info struct {
	// Version is the main module's version: a tag such as v1.2.0 for a
	// binary built with `go install …@v1.2.0`, a pseudo-version, or
	// "(devel)" for a build of a checkout.
	Version string
	// Revision is the VCS revision, with "+dirty" when the checkout had
	// changes; "unknown" when the build recorded none (go test, go run
	// outside a repository).
	Revision string
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
}

// String formats the build as `tqscavenger version` prints it.
func (i Info) String() string {
	return "tqscavenger " + i.Version + " (revision " + i.Revision + ", " + i.GoVersion + ")"
}

// Read returns the running binary's build.
func Read() Info {
	info := Info{Version: "(devel)", Revision: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if v := bi.Main.Version; v != "" {
		info.Version = v
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && info.Revision != "unknown" {
		info.Revision += "+dirty"
	}
	return info
}
