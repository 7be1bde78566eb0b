package core

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/truora/minidyn/types"
)

// TestSearchResumesPastADeletedStartKey: a page's last key, deleted before
// the next page is asked for (a scan that deletes what it finds), still
// resumes the search at the first key past it, in either direction, as
// DynamoDB does; the search used to return nothing more.
func TestSearchResumesPastADeletedStartKey(t *testing.T) {
	for _, forward := range []bool{true, false} {
		t.Run(fmt.Sprintf("forward=%v", forward), func(t *testing.T) {
			c := require.New(t)
			table, err := createPokemonTable()
			c.NoError(err)
			for i := 1; i <= 7; i++ {
				_, err := table.Put(&types.PutItemInput{TableName: &table.Name, Item: createPokemon(pokemon{ID: fmt.Sprintf("%03d", i), Type: "grass", Name: "p"})})
				c.NoError(err)
			}
			var seen []string
			in := QueryInput{Scan: true, Limit: 2, ScanIndexForward: forward}
			for range 10 {
				items, last, err := table.SearchData(in)
				c.NoError(err)
				for _, it := range items {
					seen = append(seen, *it["id"].S)
					_, err := table.Delete(&types.DeleteItemInput{TableName: &table.Name, Key: primaryKeyFromPokemonItem(it)})
					c.NoError(err)
				}
				if len(last) == 0 {
					break
				}
				in.ExclusiveStartKey = last
			}
			want := []string{"001", "002", "003", "004", "005", "006", "007"}
			if !forward {
				want = []string{"007", "006", "005", "004", "003", "002", "001"}
			}
			c.Equal(want, seen)
			c.Empty(table.Data)
		})
	}
}
