package dag

// frame is one job on the depth-first path and the index of its next dependency to visit.
type frame struct{ node, next int }

// sortTopologically returns the indexes of the plan's jobs with every job after its
// dependencies, or the names along one dependency cycle, first name repeated at the end (a → b →
// a, each depending on the next). It is an iterative depth-first search so that a 10,000-deep
// chain cannot overflow the stack; a job enters the order when its search finishes.
func sortTopologically(plan Plan) (order []int, cycle []string) {
	const (
		unvisited = iota
		onPath
		done
	)
	mark := make([]int, len(plan.Jobs))
	order = make([]int, 0, len(plan.Jobs))
	for root := range plan.Jobs {
		if mark[root] != unvisited {
			continue
		}
		stack := []frame{{node: root}}
		mark[root] = onPath
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			deps := plan.Jobs[top.node].Deps
			if top.next == len(deps) {
				mark[top.node] = done
				order = append(order, top.node)
				stack = stack[:len(stack)-1]
				continue
			}
			dep := deps[top.next]
			top.next++
			switch mark[dep] {
			case onPath:
				return nil, cycleNames(plan, stack, dep)
			case unvisited:
				mark[dep] = onPath
				stack = append(stack, frame{node: dep})
			}
		}
	}
	return order, nil
}

// cycleNames reads the cycle closing at dep off the search path.
func cycleNames(plan Plan, stack []frame, dep int) []string {
	var names []string
	for i := len(stack) - 1; i >= 0; i-- {
		n := stack[i].node
		names = append(names, plan.Jobs[n].Name)
		if n == dep {
			break
		}
	}
	// The path runs from dependents to dependencies; reverse it so each name depends on the next.
	for l, r := 0, len(names)-1; l < r; l, r = l+1, r-1 {
		names[l], names[r] = names[r], names[l]
	}
	return append(names, names[0])
}
