package turns

// OpenUntil is openUntil, for the tests of the deadline's edges.
var OpenUntil = openUntil
