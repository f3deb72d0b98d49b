package redistest

// SlotCount is the number of hash slots of a Redis Cluster.
const SlotCount = 16384
