package populate

import (
	"os"

	"github.com/riverqueue/river"
)

// riverInsert is one job for InsertManyFastTx.
type riverInsert = river.InsertManyParams

// pid is this process's id as the jobs table stores it.
func pid() int32 { return int32(os.Getpid()) }
