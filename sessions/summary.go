package sessions

import "strings"

// introEnd ends the intro of a successor thread's first message (see successorIntro);
// the summary follows it.
const introEnd = "Recorded tool results are observations from that time: files and shells may have changed since.\n\n"

// CompactedSummary returns the summary that the first message of a compaction's successor
// carries, without the intro that tells the model how to read its predecessor: what a
// person reading the transcript wants. Text that is not such a message is returned as is.
func CompactedSummary(text string) string {
	if !strings.HasPrefix(text, "# Compacted context\n") {
		return text
	}
	if _, summary, ok := strings.Cut(text, introEnd); ok {
		return summary
	}
	return text
}
