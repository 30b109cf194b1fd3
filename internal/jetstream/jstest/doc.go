// Package jstest provisions the adapter for the tests of the packages above
// it (service, writer, archive, api, bench, pi-node, pi-ctl, client): the
// session stream and cursor bucket on servers that embeddedtest started, the
// adapter's Log and Cursors over them, connections and bulk loads.
package jstest
