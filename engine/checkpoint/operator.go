package checkpoint

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dedupsim/dedupsim/engine/fsys"
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

// Compatible reports whether a stored key schema accepts a new one: Spark
// compares the number and the types of the fields, not their names
// (spark-semantics.md §10.1).
func (s Schema) Compatible(o Schema) bool {
	if len(s.Fields) != len(o.Fields) {
		return false
	}
	for i := range s.Fields {
		if s.Fields[i].Type != o.Fields[i].Type {
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
	return fsys.WriteAtomic(l.fs, schemaPath(op), []byte(data))
}

// ReadSchema reads the operator's state schemas; ok is false when absent.
func (l *Log) ReadSchema(op int) (s StateSchemas, ok bool, err error) {
	name := schemaPath(op)
	data, err := l.fs.ReadFile(name)
	if fsys.IsNotExist(err) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	lines := readLines(data)
	if len(lines) < 3 || lines[0] != "v2" {
		return s, false, fmt.Errorf("%s: not a state schema file (want v2, key schema, value schema)", name)
	}
	if err := json.Unmarshal([]byte(lines[1]), &s.Key); err != nil {
		return s, false, fmt.Errorf("%s:2: key schema: %v", name, err)
	}
	if err := json.Unmarshal([]byte(lines[2]), &s.Value); err != nil {
		return s, false, fmt.Errorf("%s:3: value schema: %v", name, err)
	}
	return s, true, nil
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
	return fsys.WriteAtomic(l.fs, operatorMetadataPath(op), append([]byte("v1\n"), b...))
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
		var op int
		if _, err := fmt.Sscanf(d, "%d", &op); err != nil || fmt.Sprint(op) != d {
			continue
		}
		name := operatorMetadataPath(op)
		data, err := l.fs.ReadFile(name)
		if fsys.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		lines := readLines(data)
		var m OperatorMetadata
		if len(lines) < 2 || lines[0] != "v1" || json.Unmarshal([]byte(lines[1]), &m) != nil {
			return nil, fmt.Errorf("%s: not an operator metadata file", name)
		}
		ops[m.OperatorInfo.OperatorID] = m.OperatorInfo.OperatorName
	}
	return ops, nil
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
