package pebblestore

// ExcisedBuckets is the number of buckets p's databases excised, for the
// twin test's check that its runs exercised the excise.
func ExcisedBuckets(p *Provider) int64 { return p.excised }
