// Package jstest starts real JetStream servers for the tests of the packages
// above the adapter (service, writer, archive, api, bench, pi-node, pi-ctl,
// client): a single node or an
// in-process cluster (from embeddedtest, which the adapter's own tests share),
// and the adapter's Log and Cursors provisioned on them.
package jstest
