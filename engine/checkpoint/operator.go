package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
	"github.com/dedupsim/dedupsim/engine/schema"
)

// Field is one column of a state schema, or one field of a struct type.
type Field struct {
	Name     string   `json:"name"`
	Type     DataType `json:"type"`
	Nullable bool     `json:"nullable"`
}

// Schema is a Spark StructType in its JSON form.
type Schema struct {
	Type   string  `json:"type"`
	Fields []Field `json:"fields"`
}

// String renders the schema as Spark 4 prints a StructType in error
// messages (StructType.toString): StructType(StructField(id,StringType,true),...).
func (s Schema) String() string {
	return "StructType(" + fieldsString(s.Fields) + ")"
}

func fieldsString(fs []Field) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("StructField(%s,%s,%t)", f.Name, f.Type, f.Nullable)
	}
	return strings.Join(parts, ",")
}

// Compatible reports whether a stored key schema accepts a new one, as
// StateSchemaCompatibilityChecker.schemasCompatible does
// (DataType.equalsIgnoreNameAndCompatibleNullability(new, stored)): the
// same number of fields, and field by field, by position, the same type,
// down into structs, arrays and maps; names (of columns and of struct
// fields) are not compared; a nullable stored field (array element, map
// value) accepts either nullability, a non-nullable one only a
// non-nullable one (spark-semantics.md §10.1).
func (s Schema) Compatible(o Schema) bool {
	return fieldsCompatible(s.Fields, o.Fields)
}

func fieldsCompatible(stored, next []Field) bool {
	if len(stored) != len(next) {
		return false
	}
	for i := range stored {
		if !(stored[i].Nullable || !next[i].Nullable) || !stored[i].Type.compatible(next[i].Type) {
			return false
		}
	}
	return true
}

// DataType is a Spark data type in the JSON form a state schema holds
// (DataType.json): an atomic type is its name ("long", "decimal(10,2)"), a
// struct {"type":"struct","fields":[...]}, an array
// {"type":"array","elementType":T,"containsNull":B}, a map
// {"type":"map","keyType":K,"valueType":V,"valueContainsNull":B}. (Spark
// also writes each field's metadata, which dedupsim leaves out.)
type DataType struct {
	// Name is an atomic type's name; "" for a struct, an array or a map.
	Name string
	// Kind is "struct", "array" or "map" for a nested type.
	Kind   string
	Fields []Field
	// Elem is an array's element or a map's value type; Key a map's key.
	Elem, Key *DataType
	// ContainsNull is an array's containsNull or a map's
	// valueContainsNull.
	ContainsNull bool
}

// Atomic is the atomic type of a name.
func Atomic(name string) DataType { return DataType{Name: name} }

// FromType is the state schema form of a column type: every struct field,
// array element and map value nullable, as Spark's file sources and
// from_json read them.
func FromType(t schema.Type) DataType {
	switch t.Kind {
	case schema.Struct:
		fields := make([]Field, len(t.Fields))
		for i, f := range t.Fields {
			fields[i] = Field{Name: f.Name, Type: FromType(f.Type), Nullable: true}
		}
		return DataType{Kind: "struct", Fields: fields}
	case schema.Array:
		e := FromType(*t.Elem)
		return DataType{Kind: "array", Elem: &e, ContainsNull: true}
	case schema.Map:
		k, v := FromType(*t.Key), FromType(*t.Elem)
		return DataType{Kind: "map", Key: &k, Elem: &v, ContainsNull: true}
	}
	return Atomic(t.SparkName())
}

// compatible is equalsIgnoreNameAndCompatibleNullability(next, t), t the
// stored type.
func (t DataType) compatible(next DataType) bool {
	if t.Name != next.Name || t.Kind != next.Kind {
		return false
	}
	switch t.Kind {
	case "struct":
		return fieldsCompatible(t.Fields, next.Fields)
	case "array":
		return (t.ContainsNull || !next.ContainsNull) && t.Elem.compatible(*next.Elem)
	case "map":
		return (t.ContainsNull || !next.ContainsNull) && t.Key.compatible(*next.Key) && t.Elem.compatible(*next.Elem)
	}
	return true
}

// sparkTypeNames are the atomic types' toString in Spark 4.
var sparkTypeNames = map[string]string{
	"string": "StringType", "long": "LongType", "integer": "IntegerType", "double": "DoubleType",
	"boolean": "BooleanType", "timestamp": "TimestampType", "null": "NullType", "void": "NullType",
}

// String renders the type as Spark 4's DataType.toString does (in error
// messages): LongType, DecimalType(10,2), ArrayType(LongType,true),
// MapType(StringType,LongType,true), StructType(StructField(a,LongType,true)).
func (t DataType) String() string {
	switch t.Kind {
	case "struct":
		return "StructType(" + fieldsString(t.Fields) + ")"
	case "array":
		return fmt.Sprintf("ArrayType(%s,%t)", t.Elem, t.ContainsNull)
	case "map":
		return fmt.Sprintf("MapType(%s,%s,%t)", t.Key, t.Elem, t.ContainsNull)
	}
	if n, ok := sparkTypeNames[t.Name]; ok {
		return n
	}
	if m := decimalType.FindStringSubmatch(t.Name); m != nil {
		return "DecimalType(" + m[1] + "," + m[2] + ")"
	}
	return t.Name // a bare struct or array (the untyped key's form)
}

// dataTypeJSON is a nested DataType's JSON object.
type dataTypeJSON struct {
	Type              string    `json:"type"`
	Fields            []Field   `json:"fields,omitempty"`
	ElementType       *DataType `json:"elementType,omitempty"`
	ContainsNull      *bool     `json:"containsNull,omitempty"`
	KeyType           *DataType `json:"keyType,omitempty"`
	ValueType         *DataType `json:"valueType,omitempty"`
	ValueContainsNull *bool     `json:"valueContainsNull,omitempty"`
}

// MarshalJSON writes Spark's JSON form.
func (t DataType) MarshalJSON() ([]byte, error) {
	cn := t.ContainsNull
	switch t.Kind {
	case "struct":
		fields := t.Fields
		if fields == nil {
			fields = []Field{}
		}
		return json.Marshal(struct {
			Type   string  `json:"type"`
			Fields []Field `json:"fields"`
		}{"struct", fields})
	case "array":
		return json.Marshal(dataTypeJSON{Type: "array", ElementType: t.Elem, ContainsNull: &cn})
	case "map":
		return json.Marshal(dataTypeJSON{Type: "map", KeyType: t.Key, ValueType: t.Elem, ValueContainsNull: &cn})
	}
	return json.Marshal(t.Name)
}

// UnmarshalJSON reads Spark's JSON form, refusing an unknown atomic type
// name, a nested type without its parts and unknown keys.
func (t *DataType) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		if !contains(schemaTypes, name) && !decimalType.MatchString(name) {
			return fmt.Errorf("type %q is not one dedupsim writes (%s, decimal(p,s))", name, strings.Join(schemaTypes, ", "))
		}
		*t = Atomic(name)
		return nil
	}
	var j dataTypeJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return err
	}
	switch {
	case j.Type == "struct" && j.Fields != nil:
		*t = DataType{Kind: "struct", Fields: j.Fields}
	case j.Type == "array" && j.ElementType != nil && j.ContainsNull != nil:
		*t = DataType{Kind: "array", Elem: j.ElementType, ContainsNull: *j.ContainsNull}
	case j.Type == "map" && j.KeyType != nil && j.ValueType != nil && j.ValueContainsNull != nil:
		*t = DataType{Kind: "map", Key: j.KeyType, Elem: j.ValueType, ContainsNull: *j.ValueContainsNull}
	default:
		return fmt.Errorf("not a struct, array or map type: %s", truncate(b))
	}
	for i, f := range t.Fields {
		if f.Name == "" {
			return fmt.Errorf("struct field %d has no name", i)
		}
		if f.Type.missing() {
			return fmt.Errorf("struct field %q has no type", f.Name)
		}
	}
	return nil
}

// missing reports a field whose JSON had no type.
func (t DataType) missing() bool { return t.Name == "" && t.Kind == "" }

// StateSchemas are the key and value schemas of one operator.
type StateSchemas struct {
	Key   Schema
	Value Schema
}

func schemaPath(op int) string { return fmt.Sprintf("state/%d/0/_metadata/schema", op) }

func operatorMetadataPath(op int) string { return fmt.Sprintf("state/%d/_metadata/metadata", op) }

// WriteSchema records the operator's state schemas (first batch of a query).
func (l *Log) WriteSchema(op int, s StateSchemas) error {
	k, _ := json.Marshal(s.Key)
	v, _ := json.Marshal(s.Value)
	data := "v2\n" + string(k) + "\n" + string(v) + "\n"
	return l.writeOnce(schemaPath(op), []byte(data))
}

// schemaTypes are the atomic type names dedupsim's schemas use (Spark's
// type names, schema.Type.SparkName), besides decimal(p,s). A bare
// "struct" is the untyped all-columns key's one field (and, with "array",
// how nested columns were stored before their types were modelled: such a
// stored key is incompatible with any typed one).
var schemaTypes = []string{"string", "timestamp", "struct", "long", "null", "integer", "double", "boolean", "array"}

// decimalType matches decimal(p,s) with p from 1 to 38 and s up to 38 (the
// scale is checked against the precision by the DDL parser).
var decimalType = regexp.MustCompile(`^decimal\(([1-9]|[12][0-9]|3[0-8]),([0-9]|[12][0-9]|3[0-8])\)$`)

// ReadSchema reads the operator's state schemas; ok is false when absent.
func (l *Log) ReadSchema(op int) (s StateSchemas, ok bool, err error) {
	name := schemaPath(op)
	data, err := l.read(name)
	if fsys.IsNotExist(err) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "v2" {
		return s, false, Corrupt(name, "not a state schema file (want a v2 line, the key schema and the value schema)")
	}
	if s.Key, err = parseSchema(lines[1]); err != nil {
		return s, false, Corrupt(name, "line 2: key schema: %v", err)
	}
	if s.Value, err = parseSchema(lines[2]); err != nil {
		return s, false, Corrupt(name, "line 3: value schema: %v", err)
	}
	return s, true, nil
}

func parseSchema(line string) (Schema, error) {
	var s Schema
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if _, err := object([]byte(line)); err != nil {
		return s, err
	}
	if err := dec.Decode(&s); err != nil {
		return s, err
	}
	if s.Type != "struct" {
		return s, fmt.Errorf("type %q: want struct", s.Type)
	}
	if len(s.Fields) == 0 {
		return s, errors.New("no fields")
	}
	for i, f := range s.Fields {
		if f.Name == "" {
			return s, fmt.Errorf("field %d has no name", i)
		}
		if f.Type.missing() {
			return s, fmt.Errorf("field %q has no type", f.Name)
		}
	}
	return s, nil
}

// OperatorMetadata is Spark 4's per-operator metadata file (SPARK-45558).
type OperatorMetadata struct {
	OperatorInfo struct {
		OperatorID   int    `json:"operatorId"`
		OperatorName string `json:"operatorName"`
	} `json:"operatorInfo"`
	StateStoreInfo []StoreInfo `json:"stateStoreInfo"`
}

// StoreInfo describes the stores of one operator.
type StoreInfo struct {
	StoreName        string `json:"storeName"`
	NumColsPrefixKey int    `json:"numColsPrefixKey"`
	NumPartitions    int    `json:"numPartitions"`
}

// WriteOperatorMetadata records which operator owns state/<op>.
func (l *Log) WriteOperatorMetadata(op int, name string, partitions int) error {
	var m OperatorMetadata
	m.OperatorInfo.OperatorID = op
	m.OperatorInfo.OperatorName = name
	m.StateStoreInfo = []StoreInfo{{StoreName: "default", NumPartitions: partitions}}
	b, _ := json.Marshal(m)
	return l.writeOnce(operatorMetadataPath(op), append([]byte("v1\n"), b...))
}

// Operators returns operator id -> short name for every operator that has a
// metadata file in the checkpoint (Spark's StateMetadataPartitionReader).
func (l *Log) Operators() (map[int]string, error) {
	ops := map[int]string{}
	dirs, err := l.fs.ReadDir("state")
	if fsys.IsNotExist(err) {
		return ops, nil
	}
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if strings.HasPrefix(d, ".") {
			continue
		}
		op, err := strconv.Atoi(d)
		if err != nil {
			continue
		}
		if op < 0 || strconv.Itoa(op) != d {
			return nil, Corrupt("state/"+d, "not an operator id as Spark writes one (a whole number from 0)")
		}
		name := operatorMetadataPath(op)
		data, err := l.read(name)
		if fsys.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m, err := parseOperatorMetadata(op, data)
		if err != nil {
			return nil, Corrupt(name, "%v", err)
		}
		ops[m.OperatorInfo.OperatorID] = m.OperatorInfo.OperatorName
	}
	return ops, nil
}

func parseOperatorMetadata(op int, data []byte) (OperatorMetadata, error) {
	var m OperatorMetadata
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "v1" {
		return m, errors.New("not an operator metadata file (want a v1 line and a JSON line)")
	}
	if _, err := object([]byte(lines[1])); err != nil {
		return m, fmt.Errorf("line 2: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(lines[1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("line 2: %v", err)
	}
	if m.OperatorInfo.OperatorID != op {
		return m, fmt.Errorf("operatorId %d in the folder of operator %d", m.OperatorInfo.OperatorID, op)
	}
	if m.OperatorInfo.OperatorName == "" {
		return m, errors.New("no operatorName")
	}
	if len(m.StateStoreInfo) == 0 {
		return m, errors.New("no stateStoreInfo")
	}
	for _, si := range m.StateStoreInfo {
		if si.StoreName == "" || si.NumColsPrefixKey < 0 || si.NumPartitions < 1 || si.NumPartitions > query.MaxShufflePartitions {
			return m, fmt.Errorf("stateStoreInfo %+v: want a store name, numColsPrefixKey >= 0 and numPartitions from 1 to %d", si, query.MaxShufflePartitions)
		}
	}
	return m, nil
}

// FormatOperators renders operators as Spark's error message does:
// (OperatorId: 0 -> OperatorName: dedupe).
func FormatOperators(ops map[int]string) string {
	ids := make([]int, 0, len(ops))
	for id := range ops {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("(OperatorId: %d -> OperatorName: %s)", id, ops[id])
	}
	return strings.Join(parts, ", ")
}
