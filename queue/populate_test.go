package queue

func init() {
	register(
		PopulateMakeArgs{Table: "signal_stats", KeyHash: "0cc175b9c0f1b6a831c399e269772661", RunID: 42},
		PopulateScheduleArgs{Table: "signal_stats", Force: true, Cleanup: true},
		PopulateCleanupArgs{Table: "signal_stats"},
	)
}
