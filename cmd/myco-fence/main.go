// Command myco-fence runs one command fenced in by myco's sandbox (see hosts/sandbox): myco
// starts it, beside its own binary, for every sandboxed command, because a small program
// starts in a fraction of the time myco's own start takes (its packages' initialization).
// Where it is missing, myco runs itself in its place. It is no command for people.
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
