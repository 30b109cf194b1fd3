// Package termtext draws session trees as text for a terminal, the way
// pi's /tree lays them out, and does the column arithmetic that cuts a
// line to a terminal's width, for pi-ctl's tree commands and tables.
package termtext
