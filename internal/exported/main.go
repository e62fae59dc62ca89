// Command exported counts the exported identifiers of a Go package, the
// way issue 22 measures the root package's surface: functions, types,
// methods (of exported types, interface methods included), constants,
// variables and exported struct fields (of exported struct types,
// embedded ones included). Test files are not read.
//
//	go run ./internal/exported [-v] [DIR]   (default: the current directory)
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
)

func main() {
	verbose := flag.Bool("v", false, "list the identifiers by kind")
	flag.Parse()
	dir := "."
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	names, err := exported(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "exported:", err)
		os.Exit(1)
	}
	if *verbose {
		for _, n := range names {
			fmt.Println(n)
		}
	}
	kinds := map[string]int{}
	for _, n := range names {
		kinds[strings.SplitN(n, " ", 2)[0]]++
	}
	fmt.Printf("%d exported identifiers in %s (", len(names), dir)
	var parts []string
	for _, k := range []string{"func", "type", "method", "const", "var", "field"} {
		parts = append(parts, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	fmt.Println(strings.Join(parts, ", ") + ")")
}

// exported lists "kind name" for every exported identifier of the package
// in dir, sorted.
func exported(dir string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	add := func(kind, name string) { out = append(out, kind+" "+name) }
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						add("func", d.Name.Name)
					} else if recv := receiver(d.Recv.List[0].Type); ast.IsExported(recv) {
						add("method", recv+"."+d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							add("type", s.Name.Name)
							members(s, add)
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									add(map[token.Token]string{token.CONST: "const", token.VAR: "var"}[d.Tok], n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// members adds the exported fields of a struct type and the methods of an
// interface type.
func members(s *ast.TypeSpec, add func(kind, name string)) {
	var list *ast.FieldList
	kind := "field"
	switch t := s.Type.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list, kind = t.Methods, "method"
	default:
		return
	}
	for _, fl := range list.List {
		if len(fl.Names) == 0 { // embedded
			if n := receiver(fl.Type); ast.IsExported(n) && kind == "field" {
				add(kind, s.Name.Name+"."+n)
			}
			continue
		}
		for _, n := range fl.Names {
			if n.IsExported() {
				add(kind, s.Name.Name+"."+n.Name)
			}
		}
	}
}

// receiver is the type name of a receiver or embedded field: T, *T, T[P],
// pkg.T.
func receiver(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiver(t.X)
	case *ast.IndexExpr:
		return receiver(t.X)
	case *ast.IndexListExpr:
		return receiver(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	case *ast.Ident:
		return t.Name
	}
	return ""
}
