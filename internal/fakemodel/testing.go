package fakemodel

import "testing"

// New starts a server for a test or benchmark and closes it when that ends.
func New(tb testing.TB, turns ...Turn) *Server {
	tb.Helper()
	srv, err := Start(turns...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	return srv
}
