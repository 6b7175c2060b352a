package queue

func init() {
	register(
		ProbeArgs{ProbeID: 42, Origin: Scorer, SentAt: goldenTime},
		ProbeAckArgs{ProbeID: 42, Target: MinerSync, ArrivedAt: goldenTime},
	)
}
