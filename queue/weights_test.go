package queue

func init() {
	register(SetWeightsArgs{Reason: "scored"})
}
