package breaker

// PermitGeneration returns the generation of the period that granted p,
// for tests that check invariants per generation.
func PermitGeneration(p *Permit) uint64 {
	if p.p == nil {
		return 0
	}
	return p.p.gen
}
