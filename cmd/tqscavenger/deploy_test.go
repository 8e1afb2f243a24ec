package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/tqscavenger/tqscavenger/internal/cli"
)

// manifest is what a Kubernetes manifest gives the command: its
// ConfigMaps' files and its container's arguments, environment and
// mounts. (deploy/check decodes the same files into the Kubernetes API
// types, in a module of its own.)
type manifest struct {
	configMaps map[string]map[string]string // name → file → content
	args       []string
	env        []map[string]any
	mounts     map[string]string // volume → mount path
	volumes    map[string]string // volume → ConfigMap, for ConfigMap volumes
}

func dig(m any, path ...string) any {
	for _, k := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

func list(v any) []map[string]any {
	var out []map[string]any
	for _, e := range asSlice(v) {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func readManifest(t *testing.T, name string) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	m := manifest{configMaps: map[string]map[string]string{}, mounts: map[string]string{}, volumes: map[string]string{}}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	pods := 0
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var pod any
		switch doc["kind"] {
		case "ConfigMap":
			files := map[string]string{}
			for k, v := range dig(doc, "data").(map[string]any) {
				files[k] = v.(string)
			}
			m.configMaps[dig(doc, "metadata", "name").(string)] = files
			continue
		case "Deployment":
			pod = dig(doc, "spec", "template", "spec")
		case "CronJob":
			pod = dig(doc, "spec", "jobTemplate", "spec", "template", "spec")
		default:
			continue
		}
		pods++
		cs := list(dig(pod, "containers"))
		if len(cs) != 1 {
			t.Fatalf("%s: %d containers, want 1", name, len(cs))
		}
		for _, a := range asSlice(cs[0]["args"]) {
			m.args = append(m.args, a.(string))
		}
		m.env = list(cs[0]["env"])
		for _, vm := range list(cs[0]["volumeMounts"]) {
			m.mounts[vm["name"].(string)] = vm["mountPath"].(string)
		}
		for _, v := range list(dig(pod, "volumes")) {
			if cm, ok := dig(v, "configMap", "name").(string); ok {
				m.volumes[v["name"].(string)] = cm
			}
		}
	}
	if pods != 1 || len(m.args) == 0 {
		t.Fatalf("%s: %d pod templates, args %v; want one, with args", name, pods, m.args)
	}
	return m
}

// TestManifestsFlags runs the command with each manifest's arguments,
// environment and config file, as its pod would: the CronJob's run makes a
// real pass on a SQLite file, the Deployment's serve settings go through
// `config`, which checks them as serve does. A misspelt flag, a bad value
// or a config file key the command does not know fails it.
func TestManifestsFlags(t *testing.T) {
	for _, c := range []struct{ file, cmd string }{{"cronjob.yaml", "run"}, {"kubernetes.yaml", "serve"}} {
		t.Run(c.file, func(t *testing.T) {
			m := readManifest(t, c.file)
			if m.args[0] != c.cmd {
				t.Fatalf("args %v, want %s first", m.args, c.cmd)
			}
			dir := t.TempDir()
			// The ConfigMaps' files where the pod mounts them.
			args := append([]string(nil), m.args...)
			for vol, path := range m.mounts {
				// A ConfigMap's files, or an empty directory for any
				// other volume (the emptyDir /tmp, the checkpoint's).
				files, ok := m.configMaps[m.volumes[vol]]
				if !ok && m.volumes[vol] != "" {
					t.Fatalf("volume %s mounts ConfigMap %q, which the manifest lacks", vol, m.volumes[vol])
				}
				local := filepath.Join(dir, vol)
				if err := os.Mkdir(local, 0o755); err != nil {
					t.Fatal(err)
				}
				for f, content := range files {
					if err := os.WriteFile(filepath.Join(local, f), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				for i, a := range m.args { // the manifest's, not one rewritten already
					if strings.HasPrefix(a, path+"/") {
						args[i] = local + strings.TrimPrefix(a, path)
					}
				}
			}
			db := filepath.Join(dir, "tasks.db")
			if code := cli.Main([]string{"seed", "--db", db, "--queues", "20"}, io.Discard, os.Stderr); code != 0 {
				t.Fatalf("seed exited %d", code)
			}
			for _, e := range m.env {
				name := e["name"].(string)
				if !strings.HasPrefix(name, "TQSCAVENGER_") {
					t.Errorf("env %s: not a TQSCAVENGER_ variable", name)
				}
				switch {
				case name == "TQSCAVENGER_DB":
					t.Setenv(name, db) // the Secret's DSN
				case e["value"] != nil:
					t.Setenv(name, e["value"].(string))
				default:
					t.Errorf("env %s: no value this test can stand in for", name)
				}
			}
			if c.cmd == "serve" {
				args[0] = "config" // checks serve's settings as serve does, and starts nothing
			}
			var out, errOut bytes.Buffer
			if code := cli.Main(args, &out, &errOut); code != 0 {
				t.Fatalf("tqscavenger %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
			}
			if c.cmd == "run" && !strings.Contains(out.String(), "outcome: completed") {
				t.Errorf("run did not complete a pass:\n%s\n%s", out.String(), errOut.String())
			}
		})
	}
}
