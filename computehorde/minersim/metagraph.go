package minersim

// Metagraph is the stub of the subnet's metagraph that miner-sync reads from GET /metagraph.
// Its JSON is a contract: fields may be added, never renamed.
type Metagraph struct {
	Netuid int              `json:"netuid"`
	Block  int64            `json:"block"`
	Miners []MetagraphEntry `json:"miners"`
}

// MetagraphEntry is one neuron. Validators are listed too, with IP "0.0.0.0" and port 0 as
// the chain shows neurons that serve no axon, so busy-excuse receipts can be judged by stake.
type MetagraphEntry struct {
	UID       int     `json:"uid"`
	Hotkey    string  `json:"hotkey"`
	Coldkey   string  `json:"coldkey"`
	IP        string  `json:"ip"`
	Port      int     `json:"port"`
	Stake     float64 `json:"stake"`
	Validator bool    `json:"validator"`
}

// Metagraph returns the fleet's miners as uids 0..N-1, then its validators.
func (f *Fleet) Metagraph() Metagraph {
	g := Metagraph{Netuid: f.cfg.Netuid, Block: f.cfg.Block, Miners: make([]MetagraphEntry, 0, len(f.miners)+len(f.validators.list))}
	for _, m := range f.miners {
		g.Miners = append(g.Miners, MetagraphEntry{
			UID: m.info.UID, Hotkey: m.info.Hotkey, Coldkey: m.info.Coldkey, IP: m.info.IP, Port: m.info.Port,
		})
	}
	for i, v := range f.validators.list {
		g.Miners = append(g.Miners, MetagraphEntry{
			UID: len(f.miners) + i, Hotkey: v.Hotkey, Coldkey: v.Hotkey, IP: "0.0.0.0", Stake: v.Stake, Validator: !v.Inactive,
		})
	}
	return g
}
