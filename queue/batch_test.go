package queue

func init() {
	register(
		SyncMetagraphArgs{Reason: "periodic"},
		RunBatchArgs{Reason: "api", RequestedAt: goldenTime},
		RunBatchShardArgs{BatchID: 7, Shard: 1, Miners: []ShardMiner{
			{Hotkey: "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY", IP: "10.0.0.7", Port: 8000},
		}},
		ScoreBatchArgs{BatchID: 7, StartedAt: goldenTime, Peak: true, Miners: []MinerClassResult{
			{Hotkey: "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY", ExecutorClass: "spin_up-4min.gpu-24gb", Executors: 3, Completed: 1, Excused: 1, Failed: 1},
		}},
	)
}
