// Package browsertest checks the server's key page in a real browser: a
// headless Chromium opens the bitemporal diagram of a key, clicks points of
// it, and the page must show the version the store holds there. It is a
// module of its own so that chromedp stays out of the library's dependencies;
// .ci/run runs it.
package browsertest
