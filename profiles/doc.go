// Package profiles is the browser server that owns the port: it serves every profile of
// MYCO_HOME at /profiles/NAME/, each through a worker process of its own.
//
// The [Pool] runs the profile workers: one process per profile (myco --mode
// profile-worker), started on the first request for it, serving that profile over a
// channel it inherits at start (one end of a socket pair, file descriptor 3; see package
// handoff): it has no name in the file system, so no other process can reach the worker,
// or stand in for it. A worker that crashes is started again on the next request, after a
// growing pause when it keeps crashing; its sessions recover the way any stopped
// process's do, and the crash leaves one log line. Closing the pool closes the workers'
// stdin pipes: each stops its sessions, saves them and exits. The worker's side of that
// contract (the inherited channel, "ready", a closed stdin as the order to stop) is
// [WorkerChannel] and [ServeWorker], which serve whatever handler the worker gives them.
//
// The [Supervisor] is the HTTP server in front of them. It checks every request (Host,
// the connecting socket's owner or the token, Origin) with package web, hands the
// connection of a request for a profile to its worker whole (split.go), forwards what it
// keeps, merges the workers' session streams into one event stream per browser
// (merge.go), and answers /status; its JSON answers and events are the structs of
// answers.go. A profile whose worker is not there gets a page that says why.
//
// It may import package web, static and views (for its error page) and chi; it must not
// import handlers (one profile's server, which runs in the worker), sessions, agent,
// hosts, workspace or config.
package profiles
