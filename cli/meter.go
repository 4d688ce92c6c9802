package cli

import "strconv"

// meterText is the context meter's text: "USER 12,345/200,000", the prompt tokens of the
// last response and the model's context window, as the browser's status bar counts them.
func meterText(used, window int) string {
	return "USER " + thousands(used) + "/" + thousands(window)
}

// thousands writes n with a comma between groups of three digits.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := strconv.Itoa(n)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
