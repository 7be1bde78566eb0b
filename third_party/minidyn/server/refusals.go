package server

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/truora/minidyn/interpreter/language"
)

// The requests below are refused by DynamoDB (and DynamoDB Local) before
// anything is read or written; minidyn accepted them, or reported a failed
// condition where DynamoDB reports the malformed expression.

// maxTransactItems is TransactWriteItems' limit on actions.
const maxTransactItems = 100

// tableNamePattern is what DynamoDB accepts as a table or index name.
var tableNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

func checkTableName(name string) error {
	if tableNamePattern.MatchString(name) {
		return nil
	}

	return validationError("Invalid table/index name.  Table/index names must be between 3 and 255 characters long, and may contain only the characters a-z, A-Z, 0-9, '_', '-', and '.'")
}

// checkCreateTableNames refuses a table or index name DynamoDB refuses.
func checkCreateTableNames(input *CreateTableInput) error {
	if err := checkTableName(aws.ToString(input.TableName)); err != nil {
		return err
	}

	for _, gsi := range input.GlobalSecondaryIndexes {
		if err := checkTableName(aws.ToString(gsi.IndexName)); err != nil {
			return err
		}
	}

	for _, lsi := range input.LocalSecondaryIndexes {
		if err := checkTableName(aws.ToString(lsi.IndexName)); err != nil {
			return err
		}
	}

	return nil
}

// expression is one expression of a request and its kind, as DynamoDB
// names it in its errors ("UpdateExpression", "ConditionExpression", ...).
type expression struct{ kind, text string }

// checkReservedWords refuses an expression that uses a reserved word as an
// attribute name (not through an ExpressionAttributeNames placeholder), as
// DynamoDB does when it parses the request, before any condition is
// evaluated.
func checkReservedWords(exprs ...expression) error {
	for _, e := range exprs {
		if e.text == "" {
			continue
		}

		l := language.NewLexer(e.text)
		tok := l.NextToken()

		for tok.Type != language.EOF {
			next := l.NextToken()
			if tok.Type == language.IDENT && next.Type != language.LPAREN && // a function's name is not an attribute's
				!strings.HasPrefix(tok.Literal, "#") && !strings.HasPrefix(tok.Literal, ":") &&
				language.IsReservedWord(strings.ToUpper(tok.Literal)) {
				return validationError(fmt.Sprintf("Invalid %s: Attribute name is a reserved keyword; reserved keyword: %s", e.kind, tok.Literal))
			}

			tok = next
		}
	}

	return nil
}

// checkUpdatePaths refuses an update expression two of whose actions name
// the same document path, or one path inside another, as DynamoDB does.
func checkUpdatePaths(expr string, aliases map[string]string) error {
	if strings.TrimSpace(expr) == "" {
		return nil
	}

	p := language.NewUpdateParser(language.NewLexer(expr))

	stmt := p.ParseUpdateExpression()
	if len(p.Errors()) != 0 || stmt == nil || stmt.Expression == nil {
		return nil // the interpreter reports the syntax error
	}

	var paths [][]string

	collectUpdatePaths(stmt.Expression, aliases, &paths)

	for i, a := range paths {
		for _, b := range paths[:i] {
			n := min(len(a), len(b))
			if !equalPaths(a[:n], b[:n]) {
				continue
			}

			how := "overlap"
			if len(a) == len(b) {
				how = "conflict"
			}

			return validationError(fmt.Sprintf("Invalid UpdateExpression: Two document paths %s with each other; must remove or rewrite one of these paths; path one: [%s], path two: [%s]",
				how, strings.Join(b, ", "), strings.Join(a, ", ")))
		}
	}

	return nil
}

func collectUpdatePaths(e language.Expression, aliases map[string]string, paths *[][]string) {
	switch n := e.(type) {
	case *language.UpdateExpression:
		for _, sub := range n.Expressions {
			collectUpdatePaths(sub, aliases, paths)
		}
	case *language.ActionExpression:
		if path, ok := documentPath(n.Left, aliases); ok {
			*paths = append(*paths, path)
		}
	}
}

// documentPath is a path's elements: attribute names (aliases resolved)
// and list positions ("[0]").
func documentPath(e language.Expression, aliases map[string]string) ([]string, bool) {
	switch n := e.(type) {
	case *language.Identifier:
		return []string{resolveName(n.Value, aliases)}, true
	case *language.IndexExpression:
		left, ok := documentPath(n.Left, aliases)
		if !ok || n.Index == nil {
			return nil, false
		}

		if n.Type == language.ObjectTypeMap {
			return append(left, resolveName(n.Index.String(), aliases)), true
		}

		return append(left, "["+n.Index.String()+"]"), true
	default:
		return nil, false
	}
}

func resolveName(name string, aliases map[string]string) string {
	if resolved, ok := aliases[name]; ok {
		return resolved
	}

	return name
}

func equalPaths(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}

	return true
}

// checkKeyCondition refuses a Query whose key condition does not test the
// partition key (hashKey) for equality: DynamoDB reads one partition.
func checkKeyCondition(expr string, aliases map[string]string, hashKey string) error {
	if strings.TrimSpace(expr) == "" {
		return nil // reported elsewhere
	}

	p := language.NewParser(language.NewLexer(expr))

	cond := p.ParseConditionalExpression()
	if len(p.Errors()) != 0 || cond == nil || cond.Expression == nil {
		return nil // the interpreter reports the syntax error
	}

	equality, mentioned := false, false

	for _, c := range conjuncts(cond.Expression) {
		if in, ok := c.(*language.InfixExpression); ok && in.Operator == "=" {
			if isAttribute(in.Left, aliases, hashKey) || isAttribute(in.Right, aliases, hashKey) {
				equality = true
				continue
			}
		}

		if mentions(c, aliases, hashKey) {
			mentioned = true
		}
	}

	switch {
	case mentioned:
		return validationError("Query key condition not supported")
	case !equality:
		return validationError("Query condition missed key schema element: " + hashKey)
	default:
		return nil
	}
}

// conjuncts are the operands of e's top-level ANDs.
func conjuncts(e language.Expression) []language.Expression {
	if in, ok := e.(*language.InfixExpression); ok && strings.EqualFold(in.Operator, "AND") {
		return append(conjuncts(in.Left), conjuncts(in.Right)...)
	}

	return []language.Expression{e}
}

func isAttribute(e language.Expression, aliases map[string]string, name string) bool {
	id, ok := e.(*language.Identifier)
	return ok && resolveName(id.Value, aliases) == name
}

// mentions reports whether e names the attribute anywhere.
func mentions(e language.Expression, aliases map[string]string, name string) bool {
	switch n := e.(type) {
	case *language.Identifier:
		return resolveName(n.Value, aliases) == name
	case *language.InfixExpression:
		return mentions(n.Left, aliases, name) || mentions(n.Right, aliases, name)
	case *language.PrefixExpression:
		return mentions(n.Right, aliases, name)
	case *language.CallExpression:
		for _, a := range n.Arguments {
			if mentions(a, aliases, name) {
				return true
			}
		}
	case *language.BetweenExpression:
		return mentions(n.Left, aliases, name)
	case *language.InExpression:
		return mentions(n.Left, aliases, name)
	}

	return false
}

// checkBatchGetDuplicates refuses a BatchGetItem that asks for one item
// twice in a table.
func (c *Client) checkBatchGetDuplicates(input *BatchGetItemInput) error {
	for name, reqs := range input.RequestItems {
		table, err := c.getTable(name)
		if err != nil {
			return nil // reported where the table is read
		}

		seen := map[string]bool{}

		for _, k := range reqs.Keys {
			key, err := table.KeySchema.GetKey(table.AttributesDef, mapAttributeValueMapToTypes(k))
			if err != nil {
				return nil // reported where the key is read
			}

			if seen[key] {
				return validationError("Provided list of item keys contains duplicates")
			}

			seen[key] = true
		}
	}

	return nil
}

// checkTransactItemCount refuses a TransactWriteItems of more than 100
// actions, as the API's constraint does.
func checkTransactItemCount(n int) error {
	if n <= maxTransactItems {
		return nil
	}

	return validationError(fmt.Sprintf("1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d", maxTransactItems))
}

// checkUpdateItemExpressions refuses an UpdateItem's expressions as
// DynamoDB does before reading the item: a reserved word as a name, paths
// that overlap.
func checkUpdateItemExpressions(update, condition string, aliases map[string]string) error {
	if err := checkReservedWords(expression{"UpdateExpression", update}, expression{"ConditionExpression", condition}); err != nil {
		return err
	}

	return checkUpdatePaths(update, aliases)
}

// checkTransactItemExpressions is checkUpdateItemExpressions for each
// action of a transaction.
func checkTransactItemExpressions(item TransactWriteItem) error {
	switch {
	case item.Put != nil:
		return checkReservedWords(expression{"ConditionExpression", aws.ToString(item.Put.ConditionExpression)})
	case item.Update != nil:
		u := item.Update
		return checkUpdateItemExpressions(aws.ToString(u.UpdateExpression), aws.ToString(u.ConditionExpression), u.ExpressionAttributeNames)
	case item.Delete != nil:
		return checkReservedWords(expression{"ConditionExpression", aws.ToString(item.Delete.ConditionExpression)})
	case item.ConditionCheck != nil:
		return checkReservedWords(expression{"ConditionExpression", aws.ToString(item.ConditionCheck.ConditionExpression)})
	default:
		return nil
	}
}
