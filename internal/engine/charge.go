package engine

// Request charges follow a simple model, documented in the README: a point
// read costs 1 RU per started KiB; a write costs 5 RU plus 1 RU per started
// KiB; a query or read feed costs 2 RU plus 0.05 RU per record read plus
// 0.01 RU per index entry read plus 1 RU per started KiB returned (every
// record and entry read counts, whether or not it is returned: the charge
// follows the work); metadata operations cost 1 RU.

func kib(n int) float64 { return float64((n + 1023) / 1024) }

func readCharge(size int) float64 {
	if size < 1024 {
		return 1
	}
	return kib(size)
}

func writeCharge(size int) float64 { return 5 + kib(size) }

func queryCharge(records, entries, returnedBytes int) float64 {
	return 2 + 0.05*float64(records) + 0.01*float64(entries) + kib(returnedBytes)
}

// MetadataCharge is what database, container and offer operations cost.
const MetadataCharge = 1.0
