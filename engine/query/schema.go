package query

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/dedupsim/dedupsim/engine/schema"
	"github.com/dedupsim/dedupsim/internal/yamlstrict"
)

// StateKeys are the dedup's state key columns in the order Spark stores
// them (StateKeyOrder): the declared keys, or with no key list every
// column of the schema; nil with no key list and no schema (the untyped
// all-columns key, whose columns are each row's fields in name order).
func (q *Query) StateKeys() []string {
	switch {
	case q.KeyNames != nil:
		var keys []string
		for _, n := range q.KeyOrder.Order(q.KeyNames) {
			keys = append(keys, q.keyCols[n]...)
		}
		return keys
	case len(q.Keys) > 0:
		return q.KeyOrder.Order(q.Keys)
	case q.Schema != nil:
		return q.KeyOrder.Order(q.Schema.Names())
	}
	return nil
}

// schema reads the `schema:` field: a Spark DDL string, or a list whose
// items are "name TYPE" strings, {name: TYPE} maps or {name: N, type: T}
// maps (the forms conform's Spark runner takes too).
func (p *parser) schema(n *yaml.Node) (*schema.Schema, error) {
	n, err := p.resolve(n, "schema")
	if err != nil {
		return nil, err
	}
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		s, err := schema.ParseDDL(n.Value)
		if err != nil {
			return nil, p.errAt(n, "schema", "%v", err)
		}
		return s, nil
	case n.Kind != yaml.SequenceNode:
		return nil, p.errAt(n, "schema", `want a Spark DDL string ("id STRING, ts TIMESTAMP") or a list of columns, got %s`, yamlstrict.Typed(n))
	}
	if len(n.Content) == 0 {
		return nil, p.errAt(n, "schema", "want at least one column")
	}
	if len(n.Content) > schema.MaxFields {
		return nil, p.errAt(n, "schema", "%d columns: at most %d", len(n.Content), schema.MaxFields)
	}
	s := &schema.Schema{}
	for i, item := range n.Content {
		ipath := fmt.Sprintf("schema[%d]", i)
		f, at, err := p.schemaItem(item, ipath)
		if err != nil {
			return nil, err
		}
		if err := s.Add(f); err != nil {
			return nil, p.errAt(at, ipath, "%v", err)
		}
	}
	return s, nil
}

func (p *parser) schemaItem(item *yaml.Node, path string) (schema.Field, *yaml.Node, error) {
	item, err := p.resolve(item, path)
	if err != nil {
		return schema.Field{}, nil, err
	}
	typ := func(n *yaml.Node, tpath string) (schema.Type, error) {
		s, err := p.str(n, tpath)
		if err != nil {
			return schema.Type{}, err
		}
		t, err := schema.ParseType(s)
		if err != nil {
			return t, p.errAt(n, tpath, "%v", unwrapOffset(err))
		}
		return t, nil
	}
	switch item.Kind {
	case yaml.ScalarNode:
		s, err := p.str(item, path)
		if err != nil {
			return schema.Field{}, nil, err
		}
		f, err := schema.ParseColumn(s)
		if err != nil {
			return f, nil, p.errAt(item, path, "%v", err)
		}
		return f, item, nil
	case yaml.MappingNode:
		if len(item.Content) == 2 {
			k, err := p.resolve(item.Content[0], path)
			if err != nil {
				return schema.Field{}, nil, err
			}
			// A one-pair map is {N: T}, even for a column called name or
			// type (as conform's runner reads it).
			if k.Kind == yaml.ScalarNode {
				t, err := typ(item.Content[1], path+"."+k.Value)
				return schema.Field{Name: k.Value, Type: t}, k, err
			}
		}
		fields, err := p.mapping(item, path, []string{"name", "type"})
		if err != nil {
			return schema.Field{}, nil, err
		}
		var f schema.Field
		var haveName, haveType bool
		for _, fl := range fields {
			switch fl.name {
			case "name":
				f.Name, err = p.nonEmptyStr(fl.val, path+".name")
				haveName = true
			case "type":
				f.Type, err = typ(fl.val, path+".type")
				haveType = true
			}
			if err != nil {
				return f, nil, err
			}
		}
		if !haveName || !haveType {
			return f, nil, p.errAt(item, path, `want {name: N, type: T} (or {N: T}, or "N T")`)
		}
		return f, item, nil
	}
	return schema.Field{}, nil, p.errAt(item, path, `want a column: "name TYPE", {name: TYPE} or {name: N, type: T}, got %s`, yamlstrict.Typed(item))
}

// unwrapOffset drops the character position of a type error: a type
// alone is short, the field path says where.
func unwrapOffset(err error) error {
	var se *schema.Error
	if errors.As(err, &se) {
		return errors.New(se.Msg)
	}
	return err
}

// checkSchema resolves the query's columns against a declared schema
// (ResolveColumns): every key column, the event-time column and the merge
// sink's match columns must resolve, and the event-time column must be a
// TIMESTAMP.
func (p *parser) checkSchema(q *Query, key *yaml.Node) *Error {
	if q.Schema == nil {
		return nil
	}
	if err := q.ResolveColumns(q.Schema); err != nil {
		e := p.errAt(key, "schema", "%v", err)
		var re *ResolveError
		if errors.As(err, &re) {
			e.Analysis = re.Class
		}
		return e
	}
	return nil
}
