package state

// Backends names the byte-store backends compiled into this binary, as
// their BytesSupplier.Name reports them. `stoatctl version` prints it.
func Backends() []string {
	return []string{InMemory().Name()}
}
