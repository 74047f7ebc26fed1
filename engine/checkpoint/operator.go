package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/dedupsim/dedupsim/engine/fsys"
	"github.com/dedupsim/dedupsim/engine/query"
)

// Field is one column of a state schema.
type Field struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// Schema is a Spark StructType in its JSON form.
type Schema struct {
	Type   string  `json:"type"`
	Fields []Field `json:"fields"`
}

// String renders the schema as Spark prints a StructType in error messages.
func (s Schema) String() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = fmt.Sprintf("StructField(%s,%s,%t)", f.Name, f.Type, f.Nullable)
	}
	return "StructType(" + strings.Join(parts, ",") + ")"
}

// Compatible reports whether a stored key schema accepts a new one, as
// StateSchemaCompatibilityChecker.schemasCompatible does
// (DataType.equalsIgnoreNameAndCompatibleNullability(new, stored)): the
// same number of fields, and field by field, by position, the same type;
// names are not compared; a nullable stored field accepts either
// nullability, a non-nullable one only a non-nullable field
// (spark-semantics.md §10.1).
func (s Schema) Compatible(o Schema) bool {
	if len(s.Fields) != len(o.Fields) {
		return false
	}
	for i := range s.Fields {
		stored, next := s.Fields[i], o.Fields[i]
		if stored.Type != next.Type || !(stored.Nullable || !next.Nullable) {
			return false
		}
	}
	return true
}

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

// schemaTypes are the column types dedupsim's schemas use (Spark's type
// names, schema.Type.SparkName), besides decimal(p,0).
var schemaTypes = []string{"string", "timestamp", "struct", "long", "null", "integer", "double", "boolean", "array"}

// decimalType matches decimal(p,0) with p from 1 to 38.
var decimalType = regexp.MustCompile(`^decimal\(([1-9]|[12][0-9]|3[0-8]),0\)$`)

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
		if !contains(schemaTypes, f.Type) && !decimalType.MatchString(f.Type) {
			return s, fmt.Errorf("field %q: type %q is not one dedupsim writes (%s)", f.Name, f.Type, strings.Join(schemaTypes, ", "))
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
