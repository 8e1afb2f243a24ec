// Package buildinfo says which build of tqscavenger is running: the module
// version, the VCS revision it was built from and the Go version, as the
// Go toolchain records them in the binary (runtime/debug.ReadBuildInfo),
// or as a release build stamps them at link time.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// version and revision are set by a release build's linker flags
// (scripts/release, the Dockerfile):
//
//	-X github.com/tqscavenger/tqscavenger/internal/buildinfo.version=v0.1.0
//	-X github.com/tqscavenger/tqscavenger/internal/buildinfo.revision=<commit>
//
// A build of a checkout records no version of its own ("(devel)"), and a
// build from a copy without .git (a container build) no revision, so a
// release names them. Empty, the toolchain's record stands.
var version, revision string

// Info describes a build.
type Info struct {
	// Version is the main module's version: a tag such as v1.2.0 for a
	// release or a binary built with `go install …@v1.2.0`, a
	// pseudo-version, or "(devel)" for a build of a checkout.
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
		return stamped(info)
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
	return stamped(info)
}

// stamped returns info with the version and revision a release build set.
func stamped(info Info) Info {
	if version != "" {
		info.Version = version
	}
	if revision != "" {
		info.Revision = revision
	}
	return info
}
