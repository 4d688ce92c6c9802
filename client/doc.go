// Package client is the Go client of myco's JSON API, one profile's: create sessions
// (children and forks), act on them (submit, waiting for the turn's end if asked;
// select_model, set_title, compact, retry, archive, restore), cancel their jobs, read their
// snapshots, answers and listing, the model catalog and the versions, and stream their
// events, each decoded into its type, with reconnects that miss nothing. Its requests,
// answers and events are the types of package api, the contract the server answers with,
// so that it cannot drift from the API; the end-to-end tests of the API drive it. The API is
// documented in docs/browser.md and docs/openapi.json.
//
// It imports package api and the standard library only: a program that uses it links none
// of the server.
package client
