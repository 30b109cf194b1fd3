// Package console holds the browser tests of pi-node's web console
// (--console, internal/console): a pi-node built from this checkout, the
// conformance sessions imported into it, and headless Chromium driven over
// the DevTools protocol (chromedp) through the console's pages as a person
// would use them — the token form, the catalog, a session's tree, an
// entry's path and context, live appends, a 5,000-entry tree, the
// keyboard, the cluster view and the export.
//
// The tests rely only on the ids, classes and attributes the pages promise
// to keep (the console's DOM contract), never on their layout. Every
// JavaScript exception, console error and Content-Security-Policy
// violation of the page fails the test.
//
// Run with -v to see the measured figures: lines starting with
// "measured:". Screenshots (light and dark) go to $PI_CONSOLE_SCREENSHOTS
// when it is set, else to the test's temporary directory; their paths are
// logged.
//
// The tests skip with -short, and when no Chromium is found on PATH
// (chromium, chromium-browser, google-chrome; CHROMIUM_BIN names another).
// They are Linux-only (process groups, parent-death signals). PI_NODE_BIN
// runs them against a given pi-node binary instead of one built from the
// checkout.
package console
