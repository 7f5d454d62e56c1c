package api

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Build describes the running binary, as debug.ReadBuildInfo reports it.
type Build struct {
	Version   string // the main module's version; "(devel)" for a build from a working tree
	GoVersion string // e.g. "go1.26.8"
	Platform  string // GOOS/GOARCH
	Revision  string // the source revision; "" when the build did not record it
	Time      string // the revision's commit time (RFC 3339); "" when not recorded
	Modified  bool   // the working tree had changes the revision does not hold
}

// ReadBuild returns the build of the running binary. Fields the binary
// does not record are empty.
func ReadBuild() Build {
	info, _ := debug.ReadBuildInfo()
	return buildOf(info)
}

// buildOf returns the build described by info, which may be nil.
func buildOf(info *debug.BuildInfo) Build {
	b := Build{Version: "(unknown)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info == nil {
		return b
	}
	if info.Main.Version != "" {
		b.Version = info.Main.Version
	}
	if info.GoVersion != "" {
		b.GoVersion = info.GoVersion
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "GOOS":
			b.Platform = s.Value + b.Platform[strings.IndexByte(b.Platform, '/'):]
		case "GOARCH":
			b.Platform = b.Platform[:strings.IndexByte(b.Platform, '/')+1] + s.Value
		}
	}
	return b
}

// String returns the build on one line, e.g. "ragfuse v1.2.0 go1.26.8
// linux/amd64 revision 7e1b7f2 (2026-01-02T03:04:05Z, modified)".
func (b Build) String() string {
	s := "ragfuse " + b.Version + " " + b.GoVersion + " " + b.Platform
	if b.Revision == "" {
		return s + " (no revision recorded)"
	}
	s += " revision " + b.Revision
	var notes []string
	if b.Time != "" {
		notes = append(notes, b.Time)
	}
	if b.Modified {
		notes = append(notes, "modified")
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, ", ") + ")"
	}
	return s
}

// buildInfoGauge is ragfuse_build_info: 1, labelled with the build.
func buildInfoGauge(b Build) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "ragfuse", Name: "build_info",
		Help: "Always 1; the labels describe the running binary."},
		[]string{"version", "revision", "goversion", "modified"})
	modified := "false"
	if b.Modified {
		modified = "true"
	}
	g.WithLabelValues(b.Version, b.Revision, b.GoVersion, modified).Set(1)
	return g
}
