package api

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestBuildOf(t *testing.T) {
	here := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name string
		info *debug.BuildInfo
		want Build
		line string
	}{
		{"no build information", nil, Build{Version: "(unknown)", GoVersion: runtime.Version(), Platform: here},
			"ragfuse (unknown) " + runtime.Version() + " " + here + " (no revision recorded)"},
		{"a working tree without version control", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			Build{Version: "(devel)", GoVersion: "go1.26.8", Platform: here},
			"ragfuse (devel) go1.26.8 " + here + " (no revision recorded)"},
		{"a release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "darwin"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs.revision", Value: "7e1b7f2"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "false"}}},
			Build{Version: "v1.2.0", GoVersion: "go1.26.8", Platform: "darwin/arm64", Revision: "7e1b7f2", Time: "2026-01-02T03:04:05Z"},
			"ragfuse v1.2.0 go1.26.8 darwin/arm64 revision 7e1b7f2 (2026-01-02T03:04:05Z)"},
		{"a modified tree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			Build{Version: "(devel)", GoVersion: "go1.26.8", Platform: here, Revision: "abc", Modified: true},
			"ragfuse (devel) go1.26.8 " + here + " revision abc (modified)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := buildOf(tt.info)
			if got != tt.want {
				t.Fatalf("buildOf = %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.line {
				t.Fatalf("String = %q, want %q", s, tt.line)
			}
		})
	}
}
