// Package lint holds the repository's lint checks, written as Go tests so
// that `go test ./internal/lint` (and `make lint`) runs them everywhere Go
// runs: formatting, go vet, the import direction between layers, and
// package naming. It has no code of its own.
package lint
