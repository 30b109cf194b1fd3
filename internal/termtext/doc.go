// Package termtext draws session trees as text for a terminal, the way
// pi's /tree lays them out, and does the column arithmetic that cuts a
// line to a terminal's width. pi-ctl's tree commands and the agent
// example print through it, so that a tree looks the same wherever it is
// printed.
package termtext
