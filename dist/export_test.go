package dist

// ReadyBuckets returns how many of the current step's buckets GradReady
// has started, and how many there are.
func ReadyBuckets(dp *DataParallel) (ready, all int) {
	dp.st.mu.Lock()
	defer dp.st.mu.Unlock()
	for _, b := range dp.st.buckets {
		if b.ready {
			ready++
		}
	}
	return ready, len(dp.st.buckets)
}
