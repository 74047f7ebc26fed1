package scenarios

import (
	"fmt"

	"github.com/dedupsim/dedupsim/engine/sparkver"
)

// SetSparkVersion gives every scenario's query version, --spark-version
// (nothing when it is ""). A scenario whose query names another version
// (or whose spark_conf the line does not have) is refused.
func SetSparkVersion(list []*Scenario, version string) error {
	if version == "" {
		return nil
	}
	if _, err := sparkver.Parse(version); err != nil {
		return fmt.Errorf("--spark-version: %w", err)
	}
	for _, s := range list {
		cfg := s.Config
		cfg.SparkVersion = version
		if err := cfg.FoldSparkVersion(); err != nil {
			return fmt.Errorf("%s: %w", s.File, err)
		}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("%s: %w", s.File, err)
		}
		s.Config = cfg
		s.SparkVersionFlag = version
	}
	return nil
}
