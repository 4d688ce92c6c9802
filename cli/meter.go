package cli

import "myco.dev/internal/humanize"

// meterText is the context meter's text: "context: 72k of 200k tokens (36%)", the prompt
// tokens of the last response against the model's context window, in the words of the
// browser's status bar.
func meterText(used, window int) string {
	return "context: " + humanize.ContextMeter(used, window)
}
