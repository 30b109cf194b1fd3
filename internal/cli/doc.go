// Package cli is the small command-line framework of pi-ctl and pi-bench:
// tables of subcommands, flags that may follow the positional arguments,
// one-line usage errors and the exit codes they map to (0 ok, 1 failure or
// problems found, 2 usage error). It works on plain writers and FlagSets,
// so each binary keeps its own environment and command types.
package cli
