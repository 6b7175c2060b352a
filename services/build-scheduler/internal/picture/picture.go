// Package picture draws a build group's DAG, each job coloured by its state, as Graphviz DOT or
// as a Mermaid flowchart. A picture is written job by job as the caller reads them, in id order
// (which is topological: a job's dependencies come before it), so a group of any size is drawn
// in constant memory.
package picture

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"drover.dev/services/build-scheduler/internal/jobgraph"
)

// Format is the language a picture is written in.
type Format string

// The formats.
const (
	DOT     Format = "dot"
	Mermaid Format = "mermaid"
)

// Formats returns every format.
func Formats() []Format { return []Format{DOT, Mermaid} }

// colour is how a state is drawn: fill and border.
type colour struct{ fill, stroke string }

// colours has an entry for every job state (TestEveryStateHasAColour).
var colours = map[jobgraph.JobState]colour{
	jobgraph.Pending:          {"#f2f3f4", "#909497"},
	jobgraph.Waiting:          {"#e5e7e9", "#7f8c8d"},
	jobgraph.Ready:            {"#aed6f1", "#2874a6"},
	jobgraph.Running:          {"#f9e79f", "#b7950b"},
	jobgraph.Complete:         {"#a9dfbf", "#1e8449"},
	jobgraph.JobFailed:        {"#f5b7b1", "#b03a2e"},
	jobgraph.DependencyFailed: {"#fad7a0", "#ca6f1e"},
	jobgraph.CancelPending:    {"#d7bde2", "#7d3c98"},
	jobgraph.CancelComplete:   {"#d5d8dc", "#566573"},
}

func colourOf(s jobgraph.JobState) colour {
	if c, ok := colours[s]; ok {
		return c
	}
	return colour{"#ffffff", "#000000"}
}

// Writer writes one picture: Begin, Job for every job in id order, End.
type Writer struct {
	w      *bufio.Writer
	format Format
}

// Begin writes the picture's opening for group g (its title and a legend of the states its jobs
// are in, with their counts) to w.
func Begin(w io.Writer, format Format, g jobgraph.Group) *Writer {
	p := &Writer{w: bufio.NewWriterSize(w, 32<<10), format: format}
	title := fmt.Sprintf("group %d %q: %s, %d jobs", g.ID, g.Name, g.State, g.Total)
	var legend []jobgraph.JobState
	for _, s := range jobgraph.JobStates() {
		if g.Counts[s] > 0 {
			legend = append(legend, s)
		}
	}
	switch format {
	case Mermaid:
		fmt.Fprintf(p.w, "---\ntitle: %s\n---\nflowchart TD\n", yamlString(title))
		for _, s := range jobgraph.JobStates() {
			c := colourOf(s)
			fmt.Fprintf(p.w, "  classDef %s fill:%s,stroke:%s,color:#1b2631\n", s, c.fill, c.stroke)
		}
		fmt.Fprintf(p.w, "  classDef unknown fill:#ffffff,stroke:#000000\n")
		fmt.Fprintf(p.w, "  subgraph legend [\"job states\"]\n    direction LR\n")
		for _, s := range legend {
			fmt.Fprintf(p.w, "    state_%s[\"%s: %d\"]:::%s\n", s, s, g.Counts[s], s)
		}
		fmt.Fprintf(p.w, "  end\n")
	default:
		fmt.Fprintf(p.w, "digraph %s {\n", dotString(fmt.Sprintf("group %d", g.ID)))
		fmt.Fprintf(p.w, "  label=%s; labelloc=t; fontname=\"Helvetica\"; rankdir=TB;\n", dotString(title))
		fmt.Fprintf(p.w, "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11, color=\"#000000\"];\n")
		fmt.Fprintf(p.w, "  edge [color=\"#566573\", arrowsize=0.7];\n")
		fmt.Fprintf(p.w, "  subgraph cluster_legend {\n    label=\"job states\"; style=\"rounded,dashed\"; color=\"#aab7b8\"; fontsize=11;\n")
		for i, s := range legend {
			c := colourOf(s)
			fmt.Fprintf(p.w, "    state_%s [label=\"%s: %d\", fillcolor=\"%s\", color=\"%s\"];\n", s, s, g.Counts[s], c.fill, c.stroke)
			if i > 0 { // one column, in lifecycle order
				fmt.Fprintf(p.w, "    state_%s -> state_%s [style=invis];\n", legend[i-1], s)
			}
		}
		fmt.Fprintf(p.w, "  }\n")
	}
	return p
}

// Job writes node j and an edge from each of its dependencies to it (dependency → dependent:
// the order jobs build in).
func (p *Writer) Job(j jobgraph.GraphNode) {
	c := colourOf(j.State)
	switch p.format {
	case Mermaid:
		fmt.Fprintf(p.w, "  j%d[\"%s<br/>%s\"]:::%s\n", j.ID, mermaidText(j.Name), j.State, safeClass(j.State))
		for _, d := range j.Dependencies {
			fmt.Fprintf(p.w, "  j%d --> j%d\n", d, j.ID)
		}
	default:
		fmt.Fprintf(p.w, "  j%d [label=%s, fillcolor=\"%s\", color=\"%s\", tooltip=%s];\n", j.ID,
			dotString(j.Name+"\n"+string(j.State)), c.fill, c.stroke,
			dotString(fmt.Sprintf("job %d %s on %s: %s", j.ID, j.Name, j.Target, j.State)))
		for _, d := range j.Dependencies {
			fmt.Fprintf(p.w, "  j%d -> j%d;\n", d, j.ID)
		}
	}
}

// End closes the picture and flushes it.
func (p *Writer) End() error {
	if p.format != Mermaid {
		fmt.Fprintf(p.w, "}\n")
	}
	return p.w.Flush()
}

// safeClass is a state as a Mermaid class name: states are known words, but one read from the
// database is never trusted to be one.
func safeClass(s jobgraph.JobState) string {
	if _, ok := colours[s]; ok {
		return string(s)
	}
	return "unknown"
}

// dotString quotes s as a DOT string: backslashes and double quotes escaped, line breaks as \n.
func dotString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", ``)
	return `"` + r.Replace(s) + `"`
}

// yamlString quotes s as a single-quoted YAML string on one line (a Mermaid title).
func yamlString(s string) string {
	return "'" + strings.NewReplacer("'", "''", "\n", " ", "\r", "").Replace(s) + "'"
}

// mermaidText makes s safe inside a quoted Mermaid label: every character Mermaid or the HTML it
// renders to would read as markup becomes an entity code.
func mermaidText(s string) string {
	r := strings.NewReplacer(`#`, `#35;`, `"`, `#quot;`, `<`, `#lt;`, `>`, `#gt;`, `&`, `#amp;`,
		"`", `#96;`, "\n", ` `, "\r", ``)
	return r.Replace(s)
}
