// Command myco-fence fences commands in by myco's sandbox (see hosts/sandbox): myco starts
// it, beside its own binary, as a session's helper, which starts the session's sandboxed
// commands, or for one command fenced on its own; a small program starts in a fraction of
// the time myco's own start takes (its packages' initialization). Where it is missing, myco
// runs itself in its place. It is no command for people.
package main

import (
	"fmt"
	"os"

	"myco.dev/hosts/sandbox"
)

func main() {
	sandbox.Main()
	fmt.Fprintln(os.Stderr, "myco-fence: started by myco only")
	os.Exit(2)
}
