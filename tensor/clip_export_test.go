package tensor

// TableGroups returns how many dispatches (groups of memory blocks) a
// BlockTable's tables make, for tests.
func TableGroups(b *BlockTable) int { return len(b.t.groups) }
