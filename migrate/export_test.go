package migrate

// KSMurmur3 is ksMurmur3, for the external tests.
func KSMurmur3(data []byte) []byte {
	h := ksMurmur3(data)
	return h[:]
}
