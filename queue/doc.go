// Package queue is the contract between Drover's services: who they are (Service and its River
// schema), how each builds its River client on its own schema, how one service inserts jobs into
// another's queue inside its own transaction, and the job-args types that travel between them.
//
// Job args are contracts. A kind never changes once shipped, each args type pins its queue (and
// its uniqueness, where it has one) in InsertOpts so that every inserter obeys the same rules, and
// fields are only ever added, optional and safe at their zero value. The golden files under
// testdata hold the JSON of every args type, and those under testdata/insert_opts its queue,
// attempts and uniqueness, so an incompatible change fails a test.
package queue
