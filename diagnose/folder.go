package diagnose

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dedupsim/dedupsim/diagnose/progress"
	"github.com/dedupsim/dedupsim/internal/suggest"
)

// ExpandEventLogDirs replaces each spark.eventLog.dir among logs (a
// folder that is no rolling event log itself) by the event logs of its
// applications: every one with a streaming query, or the one app (--app)
// names. Each application is read once here, to list it; the applications
// go into the report.
func ExpandEventLogDirs(logs []string, app string) ([]string, []Application, error) {
	var out []string
	var apps []Application
	found := false
	for _, l := range logs {
		if fi, err := os.Stat(l); err != nil || !fi.IsDir() || !progress.IsEventLogDir(l) {
			out = append(out, l)
			continue
		}
		list, skipped, err := progress.EventLogDir(l)
		if err != nil {
			return nil, nil, fmt.Errorf("diagnose: %s: %w", l, err)
		}
		diagnosed := 0
		for _, a := range list {
			da := Application{ID: a.ID, Path: a.Path, Rolling: a.Rolling, Codec: a.Codec, InProgress: a.InProgress, Queries: []AppQuery{}}
			lg, err := progress.Read([]string{a.Path})
			var ie *progress.InputError
			switch {
			case errors.As(err, &ie) && strings.Contains(ie.Err.Error(), "no StreamingQueryProgress record"):
				da.Note = "no streaming query (" + ie.Err.Error() + ")"
			case err != nil:
				da.Note = "unreadable, left out: " + err.Error()
			default:
				if len(lg.Files) > 0 && da.Codec == "" {
					da.Codec = lg.Files[0].Codec
				}
				for _, q := range lg.Queries {
					n := 0
					for _, r := range q.Runs {
						for _, p := range r.Records {
							if !p.Idle {
								n++
							}
						}
					}
					da.Queries = append(da.Queries, AppQuery{ID: q.ID, Name: q.Name, Batches: n})
				}
				da.Diagnosed = app == "" || app == a.ID
			}
			if app == a.ID {
				found = true
				if !da.Diagnosed {
					return nil, nil, fmt.Errorf("diagnose: --app %s: %s", app, da.Note)
				}
			}
			if da.Diagnosed {
				out = append(out, a.Path)
				diagnosed++
			}
			apps = append(apps, da)
		}
		for _, sk := range skipped {
			apps = append(apps, Application{ID: sk.Name, Path: filepath.Join(l, sk.Name), Queries: []AppQuery{}, Note: "skipped: " + sk.Reason})
		}
		if app == "" && diagnosed == 0 {
			return nil, nil, fmt.Errorf("diagnose: %s: no application in this spark.eventLog.dir has a streaming query (%d applications: %s)", l, len(apps), appIDs(apps))
		}
	}
	if app != "" && !found {
		if len(apps) == 0 {
			return nil, nil, fmt.Errorf("diagnose: --app %s: --app picks one application of a spark.eventLog.dir folder, and no LOG is one", app)
		}
		msg := fmt.Sprintf("diagnose: --app %s: no such application; the applications: %s", app, appIDs(apps))
		if s := suggest.Best(app, strings.Split(appIDs(apps), ", ")); s != "" {
			msg += "; did you mean " + s + "?"
		}
		return nil, nil, errors.New(msg)
	}
	return out, apps, nil
}

// appIDs lists the applications' ids (entries skipped left out).
func appIDs(apps []Application) string {
	var ids []string
	for _, a := range apps {
		if !strings.HasPrefix(a.Note, "skipped: ") {
			ids = append(ids, a.ID)
		}
	}
	return strings.Join(ids, ", ")
}
