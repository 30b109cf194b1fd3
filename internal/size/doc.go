// Package size parses and formats byte sizes as pi-node's flags take them
// (--memory-budget 512MiB), so that pi-node and pi-ctl agree on one syntax.
package size
