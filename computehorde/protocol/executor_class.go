package protocol

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"time"
)

// DefaultExecutorClass is the class upstream assumes when none is given.
const DefaultExecutorClass = "spin_up-4min.gpu-24gb"

// defaultClassesJSON is the class table as upstream ships it. New classes appear over time,
// so the table is data a deployment can replace (ParseClassTable), not code.
//
//go:embed executor_classes.json
var defaultClassesJSON []byte

// ExecutorClass describes one class of executor.
type ExecutorClass struct {
	// Name is the wire string, such as "spin_up-4min.gpu-24gb".
	Name string
	// SpinUp is how long an executor of the class takes to start.
	SpinUp time.Duration
	// GPU says whether the class's executors have a GPU; a job that needs one (docker preset
	// nvidia_all) is never sent to a class without.
	GPU  bool
	Note string
}

// ClassTable is a set of known executor classes. Miners may advertise classes it does not
// know; Lookup reports them as unknown and the caller decides what to do with them.
type ClassTable struct {
	classes []ExecutorClass
	byName  map[string]int
}

// DefaultClassTable returns the classes upstream knows today.
func DefaultClassTable() ClassTable {
	table, err := ParseClassTable(defaultClassesJSON)
	if err != nil {
		panic(err) // unreachable: the embedded table is tested
	}
	return table
}

// ParseClassTable reads a class table: a JSON list of {"name", "spin_up_seconds", "gpu", "note"}.
// A class without "gpu": true is taken to have no GPU.
func ParseClassTable(data []byte) (ClassTable, error) {
	var rows []struct {
		Name          string `json:"name"`
		SpinUpSeconds int    `json:"spin_up_seconds"`
		GPU           bool   `json:"gpu"`
		Note          string `json:"note"`
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		return ClassTable{}, fmt.Errorf("parse class table: %w", err)
	}
	table := ClassTable{byName: make(map[string]int, len(rows))}
	for _, row := range rows {
		if row.Name == "" || row.SpinUpSeconds < 0 {
			return ClassTable{}, fmt.Errorf("parse class table: invalid class %q", row.Name)
		}
		if _, dup := table.byName[row.Name]; dup {
			return ClassTable{}, fmt.Errorf("parse class table: duplicate class %q", row.Name)
		}
		table.byName[row.Name] = len(table.classes)
		table.classes = append(table.classes, ExecutorClass{
			Name: row.Name, SpinUp: time.Duration(row.SpinUpSeconds) * time.Second, GPU: row.GPU, Note: row.Note,
		})
	}
	return table, nil
}

// Lookup returns the named class, and false when the table does not know it.
func (t ClassTable) Lookup(name string) (ExecutorClass, bool) {
	i, ok := t.byName[name]
	if !ok {
		return ExecutorClass{}, false
	}
	return t.classes[i], true
}

// Classes returns the known classes in table order.
func (t ClassTable) Classes() []ExecutorClass {
	return append([]ExecutorClass(nil), t.classes...)
}
