// Package e2e holds the real-browser end-to-end tests of myco's browser UI. They build the
// real myco binary, start it on 127.0.0.1 with a throwaway MYCO_HOME whose profile points
// at the scripted fake model (internal/fakemodel), and drive Debian's Chromium headless
// with chromedp: real clicks and key presses on real pages, every page's console checked
// for content-policy violations and script errors.
//
// The package has no code of its own besides this comment; everything is in its tests. A
// missing Chromium or missing htmx assets (make assets) skip the tests on a developer
// machine and fail them when the environment variable CI is set. With MYCO_SCREENSHOTS set
// to a directory, the screenshot test saves the main screens there.
//
// Nothing imports it.
package e2e
