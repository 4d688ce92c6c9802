// Package web is what both HTTP servers of myco share: the supervisor that owns the port
// (package profiles) and each profile's server (package handlers). It holds the checks
// every request passes (the Host header, the connecting socket's owner or the token, the
// Origin of state-changing requests and event streams), the security headers, the server's
// time bounds, the JSON and server-sent-event writers, and the one error answer: an
// [Error] carries the status, a stable code and the sentence shown to a person, apart from
// the cause that is logged; [Resolve] is the one mapping from an error to it, and
// [ErrorBody] the one JSON envelope it is written in.
//
// It knows no domain: a server passes its own errors to [Resolve] through a [Domain]
// function, written once per server. It imports only the standard library, the API's
// contract (myco.dev/api, for the envelope) and myco.dev/internal/..., never sessions,
// handlers, profiles, views or chi.
package web
