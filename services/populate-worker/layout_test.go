package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/packages"
)

// TestFilesHaveNoReferenceBackUp keeps the service's files in floors: a file may use what files
// below it declare, and no file uses, directly or through others, one that uses it. Package
// boundaries enforce this between packages; within a package only this test does. A failure
// names the files of each cycle and one reference of each: move the declaration it names to the
// file of the floor below where it belongs (internal/populate/doc.go maps the floors).
func TestFilesHaveNoReferenceBackUp(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo, Dir: dir,
	}, "./...")
	require.NoError(t, err)
	ours := func(path string) bool {
		return strings.HasPrefix(path, dir+string(filepath.Separator)) && !strings.HasSuffix(path, "_test.go")
	}
	refs := map[string]map[string]string{} // file → file it uses → one name it uses there
	var files []string
	for _, pkg := range pkgs {
		require.Empty(t, pkg.Errors, "package %s", pkg.PkgPath)
		for _, f := range pkg.Syntax {
			if name := pkg.Fset.Position(f.Pos()).Filename; ours(name) {
				files = append(files, name)
			}
		}
		for id, obj := range pkg.TypesInfo.Uses {
			from, to := pkg.Fset.Position(id.Pos()).Filename, pkg.Fset.Position(obj.Pos()).Filename
			if obj.Pkg() == nil || from == to || !ours(from) || !ours(to) {
				continue
			}
			if refs[from] == nil {
				refs[from] = map[string]string{}
			}
			refs[from][to] = obj.Name()
		}
	}
	require.NotEmpty(t, files)
	for _, cycle := range cycles(files, refs) {
		var why []string
		for _, f := range cycle {
			for to, name := range refs[f] {
				if slices.Contains(cycle, to) {
					rel := func(p string) string { r, _ := filepath.Rel(dir, p); return r }
					why = append(why, rel(f)+" uses "+name+" of "+rel(to))
				}
			}
		}
		slices.Sort(why)
		t.Errorf("files that use each other:\n  %s", strings.Join(why, "\n  "))
	}
}

// cycles returns the strongly connected groups of more than one file (Tarjan's algorithm).
func cycles(files []string, refs map[string]map[string]string) [][]string {
	index, low, onStack := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for w := range refs[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var group []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			group = append(group, w)
			if w == v {
				break
			}
		}
		if len(group) > 1 {
			slices.Sort(group)
			out = append(out, group)
		}
	}
	for _, f := range files {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	return out
}
