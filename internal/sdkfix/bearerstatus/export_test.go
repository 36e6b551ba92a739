package bearerstatus

// Pending is the number of requests whose token information h holds.
func Pending(h *Handler) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.verified)
}
