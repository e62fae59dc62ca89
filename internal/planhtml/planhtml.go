// Package planhtml renders the typed parts of a plan (plan.PartView: a
// diff with its added and removed lines marked, a table) on the pages a
// person approves on: the approval service's and the local approval page.
// A part is always there whole; past its first lines it is folded behind
// "expand", never dropped.
package planhtml

import (
	"html/template"

	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// Lines shown before "expand".
const (
	DiffLines = 40 // diff lines
	TableRows = 20 // table rows
)

// A Card is one part as a page shows it.
type Card struct {
	Kind           string
	Heading        string
	Added, Removed int
	First, More    []plan.DiffLine
	Columns        []string
	Rows, MoreRows [][]string
}

// Cards are the parts as a page shows them.
func Cards(parts []plan.PartView) []Card {
	var out []Card
	for _, p := range parts {
		c := Card{Kind: p.Kind, Heading: p.Title, Added: p.Added, Removed: p.Removed, Columns: p.Columns}
		if c.Heading == "" {
			c.Heading = "Change"
			if p.Path != "" {
				c.Heading = "Change to " + p.Path
			}
			if p.Kind == "table" {
				c.Heading = "Table"
			}
		}
		c.First, c.More = split(p.Lines, DiffLines)
		c.Rows, c.MoreRows = split(p.Rows, TableRows)
		out = append(out, c)
	}
	return out
}

func split[T any](s []T, n int) (first, more []T) {
	if len(s) <= n {
		return s, nil
	}
	return s[:n], s[n:]
}

// OpClass is the CSS class of a diff line.
func OpClass(op string) string {
	switch op {
	case plan.OpAdd:
		return "add"
	case plan.OpRemove:
		return "del"
	case plan.OpHunk:
		return "hunk"
	}
	return "ctx"
}

// Funcs are the template functions Templates uses: vis shows invisible
// and control characters as escapes (prompt.Visible), op is OpClass.
func Funcs() template.FuncMap {
	return template.FuncMap{"vis": prompt.Visible, "op": OpClass}
}

// Templates defines "parts" ({{template "parts" .Cards}}) and "diffline";
// parse it into a template that has Funcs. CSS styles them.
const Templates = `{{define "parts"}}{{range $i, $p := .}}
    <section class="part part-{{.Kind}}" data-part="{{$i}}">
      <h3 class="part-head">{{vis .Heading}} {{if eq .Kind "diff"}}<span class="counts"><span class="added">+{{.Added}}</span> <span class="removed">−{{.Removed}}</span></span>{{else}}<span class="counts">{{len .Rows}}{{if .MoreRows}} + {{len .MoreRows}}{{end}} rows</span>{{end}}</h3>
      {{if eq .Kind "diff"}}
      <div class="diff" role="list">{{range .First}}{{template "diffline" .}}{{end}}</div>
      {{if .More}}<details class="more-diff" data-k="part:{{$i}}"><summary>expand: {{len .More}} more diff lines</summary><div class="diff" role="list">{{range .More}}{{template "diffline" .}}{{end}}</div></details>{{end}}
      {{else}}
      <table class="parttable"><thead><tr>{{range .Columns}}<th>{{vis .}}</th>{{end}}</tr></thead>
      <tbody>{{range .Rows}}<tr>{{range .}}<td class="mono">{{vis .}}</td>{{end}}</tr>{{end}}</tbody></table>
      {{if .MoreRows}}<details class="more-diff" data-k="part:{{$i}}"><summary>expand: {{len .MoreRows}} more rows</summary><table class="parttable"><tbody>{{range .MoreRows}}<tr>{{range .}}<td class="mono">{{vis .}}</td>{{end}}</tr>{{end}}</tbody></table></details>{{end}}
      {{end}}
    </section>
{{end}}{{end}}{{define "diffline"}}<div class="dl {{op .Op}}" role="listitem"><span class="op" aria-label="{{op .Op}}">{{if eq .Op "@@"}}@@{{else}}{{.Op}}{{end}}</span><span class="t">{{if eq .Op "@@"}} {{vis .Text}} @@{{else}}{{vis .Text}}{{end}}</span></div>{{end}}`

// CSS styles what Templates renders.
const CSS = `.part { margin: 8px 0 12px; border: 1px solid #d0d7de; border-radius: 6px; }
.part-head { font-size: 14px; margin: 0; padding: 6px 10px; border-bottom: 1px solid #d0d7de; overflow-wrap: anywhere; }
.part-head .counts { font-weight: 400; font-size: 13px; margin-left: 6px; }
.part-head .added { color: #1a7f37; } .part-head .removed { color: #cf222e; }
.diff { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; line-height: 1.45; }
.dl { display: flex; white-space: pre-wrap; overflow-wrap: anywhere; unicode-bidi: isolate; }
.dl .op { flex: 0 0 2.2em; text-align: center; user-select: none; color: #57606a; }
.dl .t { flex: 1; padding-right: 8px; }
.dl.add { background: #e6ffec; } .dl.add .op { color: #1a7f37; font-weight: 700; }
.dl.del { background: #ffebe9; } .dl.del .op { color: #cf222e; font-weight: 700; }
.dl.hunk { background: #ddf4ff; color: #57606a; }
details.more-diff > summary { padding: 4px 10px; cursor: pointer; }
table.parttable td { white-space: pre-wrap; overflow-wrap: anywhere; }`
