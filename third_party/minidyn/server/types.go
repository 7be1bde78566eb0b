package server

// AttributeValue is a concrete representation of DynamoDB's AttributeValue
// that works with standard json encoding/decoding. B, L and M are omitted
// when nil, not when empty: an empty list, map or binary is a value.
type AttributeValue struct {
	B    []byte                     `json:"B,omitzero"`
	BOOL *bool                      `json:"BOOL,omitempty"`
	BS   [][]byte                   `json:"BS,omitempty"`
	L    []*AttributeValue          `json:"L,omitzero"`
	M    map[string]*AttributeValue `json:"M,omitzero"`
	N    *string                    `json:"N,omitempty"`
	NS   []*string                  `json:"NS,omitempty"`
	NULL *bool                      `json:"NULL,omitempty"`
	S    *string                    `json:"S,omitempty"`
	SS   []*string                  `json:"SS,omitempty"`
}
