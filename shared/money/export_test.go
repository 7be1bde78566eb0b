package money

// MustRate is ParseRate for the tests' constant rates.
func MustRate(s string) Rate {
	r, err := ParseRate(s)
	if err != nil {
		panic(err)
	}
	return r
}
