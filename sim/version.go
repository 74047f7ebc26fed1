package sim

import (
	"fmt"
	"sort"

	"go.yaml.in/yaml/v3"
)

// FoldSparkVersion moves SparkVersion and SparkConf into the query text
// (its spark_version and spark_conf, docs/exec-format.md) and clears them,
// so that every consumer of Query (the simulator, the engine process of a
// run against Kafka) follows the version. A query that names another
// version, or sets a conf to another value, is refused. With neither set
// the query text is left as it is, byte for byte.
func (c *Config) FoldSparkVersion() error {
	if c.SparkVersion == "" && len(c.SparkConf) == 0 {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(c.Query), &doc); err != nil {
		return fmt.Errorf("sim: query: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("sim: query: spark_version: the query is not a mapping")
	}
	root := doc.Content[0]
	get := func(m *yaml.Node, key string) *yaml.Node {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	add := func(m *yaml.Node, key string, val *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, val)
	}
	str := func(v string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: v, Style: yaml.DoubleQuotedStyle}
	}
	if v := c.SparkVersion; v != "" {
		if have := get(root, "spark_version"); have != nil {
			if have.Value != v {
				return fmt.Errorf("sim: spark_version %s: the query says spark_version: %s; give one, or the same", v, have.Value)
			}
		} else {
			add(root, "spark_version", str(v))
		}
	}
	if len(c.SparkConf) > 0 {
		conf := get(root, "spark_conf")
		if conf == nil {
			conf = &yaml.Node{Kind: yaml.MappingNode}
			add(root, "spark_conf", conf)
		} else if conf.Kind != yaml.MappingNode {
			return fmt.Errorf("sim: query: spark_conf is not a mapping")
		}
		keys := make([]string, 0, len(c.SparkConf))
		for k := range c.SparkConf {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if have := get(conf, k); have != nil {
				if have.Value != c.SparkConf[k] {
					return fmt.Errorf("sim: spark_conf %s: %q here but %q in the query; give one, or the same", k, c.SparkConf[k], have.Value)
				}
				continue
			}
			add(conf, k, str(c.SparkConf[k]))
		}
	}
	b, err := yaml.Marshal(&doc)
	if err != nil {
		return fmt.Errorf("sim: query: %w", err)
	}
	c.Query = QueryText(b)
	c.SparkVersion, c.SparkConf = "", nil
	return nil
}
