package populate

import "drover.dev/queue"

// Asker is who asked for a make: the background (the feeder, a reschedule, a reclaim) or a
// populate run, whose success count, errors and state count the makes done for it alone.
type Asker struct{ run int64 }

// Background is the asker of the makes of scheduled keys that no populate run asked for.
var Background = Asker{}

// ForRun is the asker of the makes of populate run id.
func ForRun(id int64) Asker { return Asker{run: id} }

// AskerOf is who asked for the make job args.
func AskerOf(args queue.PopulateMakeArgs) Asker { return Asker{run: args.RunID} }

// Run returns the populate run that asked, and false for the background.
func (a Asker) Run() (int64, bool) { return a.run, a.run != 0 }

// is reports whether run asked.
func (a Asker) is(run int64) bool { id, ok := a.Run(); return ok && id == run }
