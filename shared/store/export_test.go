package store

// SetOpenPage makes the open index's pages small, so that tests page.
func SetOpenPage(d *Dynamo, n int) { d.openPage = n }
