// The pinned linters of make lint (go tool -modfile=tools/go.mod NAME):
// a module of their own, so that their dependencies never change the
// versions the dedupsim module builds with. goimports is taken at the
// golang.org/x/tools version staticcheck v0.8.2 requires, so that
// staticcheck builds with the one it was released with.
module github.com/dedupsim/dedupsim/tools

go 1.26.0

tool (
	golang.org/x/tools/cmd/goimports
	honnef.co/go/tools/cmd/staticcheck
)

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/telemetry v0.0.0-20260924152758-ed294f943157 // indirect
	golang.org/x/tools v0.51.0 // indirect
	honnef.co/go/tools v0.8.2 // indirect
)
