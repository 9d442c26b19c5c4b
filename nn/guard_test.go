package nn

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestGraphOpsGuarded reads this package's source: every exported Graph
// method that makes a Var begins its call with g.use (or g.claim), which
// refuses a released graph and a second goroutine, or returns another
// exported Graph method's result, or calls a helper that does. Exp once
// lacked the guard.
func TestGraphOpsGuarded(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	type method struct {
		body *ast.BlockStmt
		file string
	}
	methods := map[string]method{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Body == nil || len(fn.Recv.List) != 1 {
				continue
			}
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "Graph" {
					methods[fn.Name.Name] = method{fn.Body, f}
				}
			}
		}
	}
	// guarded reports whether a method's body calls g.use or g.claim, or
	// (through its return statements and calls) a guarded method.
	memo := map[string]bool{}
	var guarded func(name string, depth int) bool
	guarded = func(name string, depth int) bool {
		if v, ok := memo[name]; ok {
			return v
		}
		m, ok := methods[name]
		if !ok || depth > 8 {
			return false
		}
		found := false
		ast.Inspect(m.body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || found {
				return !found
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "g" {
					if sel.Sel.Name == "use" || sel.Sel.Name == "claim" || sel.Sel.Name != name && guarded(sel.Sel.Name, depth+1) {
						found = true
					}
				}
			}
			return !found
		})
		memo[name] = found
		return found
	}
	// Not ops: they make no Var of an op, or run the caller's function.
	notOps := map[string]bool{"Grad": true, "WithAutocast": true, "WithAutocastDType": true, "Release": true}
	for name := range methods {
		if !ast.IsExported(name) || notOps[name] {
			continue
		}
		if !guarded(name, 0) {
			t.Errorf("Graph.%s (%s) neither calls g.use nor delegates to a method that does", name, methods[name].file)
		}
	}
}
