module drover.dev/services/miner-sync

go 1.26.0
